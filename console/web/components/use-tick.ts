import { useEffect, useState } from 'preact/hooks';

/** Re-renders every `ms` so ages ("5 s ago") move without new data; answers the current time. */
export function useTick(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
