/**
 * One ingester replica's report (GET <path> on its admin port), given up after `timeoutMs`
 * whatever happens: the abort signal alone did not end a request stuck in a proxy's CONNECT (seen
 * with NODE_USE_ENV_PROXY), and one stuck replica must never stop the loop for the others. Read up
 * to `maxBytes` when given (a longer answer is refused, not read).
 */
export async function fetchReplicaReport<T>(
  url: string,
  path: string,
  timeoutMs: number,
  maxBytes?: number,
): Promise<T> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  const request = (async () => {
    const res = await fetch(`${url}${path}`, { signal: abort.signal });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    if (maxBytes === undefined) return (await res.json()) as T;
    const length = Number(res.headers.get('content-length'));
    if (Number.isFinite(length) && length > maxBytes) {
      abort.abort();
      throw new Error(`a report of ${length} bytes is larger than ${maxBytes}`);
    }
    const text = await res.text();
    if (text.length > maxBytes) throw new Error(`a report larger than ${maxBytes} bytes`);
    return JSON.parse(text) as T;
  })();
  try {
    return await Promise.race([request, deadline]);
  } finally {
    clearTimeout(timer);
    request.catch(() => {});
  }
}
