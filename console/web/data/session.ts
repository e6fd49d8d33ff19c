/** The signed-in user (GET /api/session), signing in and out. The tab's secret itself: session-secret.ts. */
import type { SessionInfo, SignedIn } from '../../shared/console-api.js';
import { api } from './api.js';
import { findSession, forget, remember } from './session-secret.js';

export const readSession = () => api<SessionInfo>('GET', '/api/session');

/** Spends a token (the printed URL's one-time token, or a Kubernetes token) for this tab's session. */
export async function signIn(token: string): Promise<void> {
  remember((await api<SignedIn>('POST', '/api/login', { token })).session);
}

export async function signOut(): Promise<void> {
  await api('POST', '/api/logout');
  forget();
}

/**
 * This tab's session at start: the URL `intake console` printed carries a one-time token, spent
 * here (and taken out of the address bar first); otherwise the tab's own session, or that of
 * another of the console's tabs.
 */
export async function resumeSession(): Promise<void> {
  const token = new URLSearchParams(location.search).get('token');
  if (token === null) return findSession();
  history.replaceState(null, '', `${location.pathname}${location.hash}`);
  await signIn(token);
}
