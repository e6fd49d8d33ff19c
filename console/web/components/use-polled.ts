import { useEffect } from 'preact/hooks';

/**
 * Reads with `load` now and every `ms` while the component stays, until `deps` change: each answer
 * goes to `onData`, each failure to `onError`, none after the component has gone.
 */
export function usePolled<T>(
  load: () => Promise<T>,
  ms: number,
  onData: (data: T) => void,
  onError: (err: Error) => void,
  deps: readonly unknown[],
): void {
  useEffect(() => {
    let live = true;
    const read = () =>
      load().then(
        (data) => live && onData(data),
        (err: Error) => live && onError(err),
      );
    void read();
    const t = setInterval(read, ms);
    return () => {
      live = false;
      clearInterval(t);
    };
    // `load`, `onData` and `onError` are new functions each render; `deps` says when they read anew.
  }, [ms, ...deps]);
}
