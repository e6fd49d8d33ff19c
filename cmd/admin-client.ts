/**
 * The client of a running ingester's admin listener (ingester/http/admin-listener.ts and
 * ingester/dead-letters/admin-endpoints.ts), for the commands that read or act on one.
 */
import { ConfigError } from '../common/config-files.js';
import { inertText } from '../common/sender-text.js';

// A state-changing admin call carries what a cross-site page cannot send (ingester/http/admin-guard.ts).
const ADMIN_WRITE = { headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' }, body: '{}' };

/** At most this much of an answer that is not what was asked for is quoted in the error. */
const QUOTED_CHARS = 200;

/**
 * An admin call that failed, reported like a configuration mistake (no stack, exit 2): the
 * listener not reached (`status` undefined), an error status, or an answer that is not JSON. A
 * caller tells an endpoint an older ingester lacks (404) from the rest by `status`.
 */
export class AdminCallError extends ConfigError {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'AdminCallError';
  }
}

/** GET or POST `url`; the JSON answer, or an AdminCallError naming the listener or the refusal. */
export async function adminCall(
  url: string,
  method: 'GET' | 'POST',
  payload: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { method, ...(method === 'GET' ? {} : { ...ADMIN_WRITE, body: JSON.stringify(payload) }) });
    text = await res.text();
  } catch (err) {
    throw new AdminCallError(
      `cannot reach the ingester's admin listener at ${url}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`,
    );
  }
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  // The answer is the listener's (or a proxy's in front of it): quoted short, and inert on a terminal.
  const quoted = body === undefined ? inertText(text, QUOTED_CHARS) : inertText(JSON.stringify(body));
  if (!res.ok) throw new AdminCallError(`${method} ${url}: ${res.status} ${quoted}`, res.status);
  if (body === undefined)
    throw new AdminCallError(`${method} ${url}: ${res.status} with an answer that is not JSON: ${quoted}`, res.status);
  return body;
}
