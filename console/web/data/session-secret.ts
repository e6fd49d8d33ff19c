/**
 * The session secret this tab sends in X-Intake-Session (console/server/security.ts). It is kept
 * in sessionStorage, which only this origin (scheme, host and port) can read: unlike a cookie, no
 * other server on 127.0.0.1 gets it. A tab opened later (a new tab, a link opened in one) asks the
 * console's other open tabs for it over a BroadcastChannel, which is per origin as well.
 */
const STORAGE_KEY = 'intake-console-session';

type Message = { type: 'ask' } | { type: 'share'; secret: string } | { type: 'forget' };

const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('intake-console-session') : undefined;
let secret: string | undefined = sessionStorage.getItem(STORAGE_KEY) ?? undefined;
const waiting = new Set<() => void>();

channel?.addEventListener('message', (e: MessageEvent<Message>) => {
  const m = e.data;
  if (m.type === 'ask' && secret) channel.postMessage({ type: 'share', secret } satisfies Message);
  else if (m.type === 'share' && !secret && typeof m.secret === 'string') remember(m.secret);
  else if (m.type === 'forget') forget(false);
});

export const sessionSecret = (): string | undefined => secret;

export function remember(value: string): void {
  secret = value;
  sessionStorage.setItem(STORAGE_KEY, value);
  for (const wake of waiting) wake();
}

/** Drops the secret here and, after a sign-out, in the console's other tabs. */
export function forget(tellOtherTabs = true): void {
  secret = undefined;
  sessionStorage.removeItem(STORAGE_KEY);
  if (tellOtherTabs) channel?.postMessage({ type: 'forget' } satisfies Message);
}

/** Without a secret: asks the other tabs of this origin, waiting up to `ms` for one to answer. */
export async function findSession(ms = 400): Promise<void> {
  if (secret || !channel) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      waiting.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    waiting.add(done);
    channel.postMessage({ type: 'ask' } satisfies Message);
  });
}
