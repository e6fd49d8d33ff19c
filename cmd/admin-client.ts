/**
 * The client of a running ingester's admin listener (ingester/http/admin-listener.ts and
 * ingester/dead-letters/admin-endpoints.ts), for the commands that read or act on one.
 */
import { ConfigError } from '../common/config-files.js';

// A state-changing admin call carries what a cross-site page cannot send (ingester/http/admin-guard.ts).
const ADMIN_WRITE = { headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' }, body: '{}' };

/** GET or POST `url`; the JSON answer, or a ConfigError naming the listener or the refusal. */
export async function adminCall(
  url: string,
  method: 'GET' | 'POST',
  payload: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { method, ...(method === 'GET' ? {} : { ...ADMIN_WRITE, body: JSON.stringify(payload) }) });
  } catch (err) {
    throw new ConfigError(
      `cannot reach the ingester's admin listener at ${url}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`,
    );
  }
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new ConfigError(`${method} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}
