/**
 * The console server's JSON API, called with the session cookie and the session secret in
 * X-Intake-Session (session-secret.ts); errors carry the server's message unchanged. The other
 * modules of data/ name what each call is for; pages and components call those, not this.
 */
import { sessionSecret } from './session-secret.js';

/** The headers that authorize a request of this tab: its session secret, if it has one. */
export function sessionHeaders(): Record<string, string> {
  const secret = sessionSecret();
  return secret ? { 'x-intake-session': secret } : {};
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: sessionHeaders() };
  // Every write is JSON (the server refuses other writes: a cross-site form cannot send JSON).
  if (method !== 'GET') {
    init.headers = { ...sessionHeaders(), 'content-type': 'application/json' };
    init.body = JSON.stringify(body ?? {});
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    const e = parsed as { message?: string; error?: string } | undefined;
    throw new ApiError(res.status, e?.message ?? `HTTP ${res.status}`, e?.error);
  }
  return parsed as T;
}
