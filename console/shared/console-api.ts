/**
 * The console server's JSON answers, as the page reads them: one declaration for both sides (the
 * server's routes return these, the page's data/ modules expect them). Types only; what they carry
 * from intake's own contracts comes from api/.
 */
import type { AuthenticationMode, SignatureScheme } from '../../api/authentication.js';

/** GET /api/session. */
export interface SessionInfo {
  mode: 'kubeconfig' | 'token';
  signedIn: boolean;
  user?: string;
  /** The namespaces the user may list (none when they may not list namespaces). */
  namespaces?: string[];
  defaultNamespace?: string;
}

/** POST /api/login: the session's secret, which the page sends in X-Intake-Session. */
export interface SignedIn {
  user: string;
  session: string;
}

/** GET .../:plural/:name/credentials: what the user's own token may read of the credentials Secret. */
export interface Credentials {
  /** How senders authenticate: an API key always by its key (`basic`). */
  mode: AuthenticationMode;
  username: string;
  /** The password (integrations) or the key (API keys); empty in mode signature. */
  secret: string;
  /** The whole `Basic ...` header value; empty in mode signature. */
  authorization: string;
  /** The Secret holding the password or key (mode signature: the signing secret's). */
  secretName: string;
  /** Modes signature and basic+signature: the scheme and the current signing secret. */
  signature?: { scheme: SignatureScheme; signingSecret: string; secretName: string; key: string };
}

/** POST .../webhookintegrations/:name/send: the ingester's answer to the test event (or dry run). */
export interface SendResult {
  url: string;
  status: number;
  contentType: string;
  body: string;
  durationMs: number;
}

/** POST .../webhookintegrations/:name/curl. */
export interface CurlResult {
  command: string;
  /** What the command needs that the console could not fill in (a secret the user may not read). */
  note?: string;
}

/** One of spec.mapping.tests as run by POST .../webhookintegrations/:name/mapping-tests. */
export interface MappingTestResult {
  /** The test's index; -1 for the mapping itself (it did not compile). */
  index: number;
  /** What happened, in words the page shows as they are; `passed` only when the events matched. */
  outcome: 'passed' | 'failed' | 'timed out' | 'not run';
  passed: boolean;
  message: string;
  events?: unknown[];
}
