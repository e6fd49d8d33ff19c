/**
 * The console server's JSON API, called with the session cookie and the session secret in
 * X-Intake-Session (session.ts); errors carry the server's message unchanged.
 */
import type {
  Activity as ApiActivity,
  RecentRefusal,
  UnauthenticatedSender as ApiUnauthenticatedSender,
} from '../../../api/activity.js';
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

export const resourcePath = (ns: string, plural: string, name?: string): string =>
  `/api/namespaces/${encodeURIComponent(ns)}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/*
 * status.activity as the operator writes it, in the shapes api/activity.ts defines; every field
 * optional but a refusal's time, since the page reads the status from the cluster as it finds it,
 * unchecked.
 */
/** One refusal of an authenticated request. */
export type Refusal = Partial<RecentRefusal> & Pick<RecentRefusal, 'time'>;
/** A sender refused before it proved credentials: only its address and a count. */
export type UnauthenticatedSender = Partial<ApiUnauthenticatedSender>;
export type Activity = Partial<Omit<ApiActivity, 'recentRefusals' | 'unauthenticatedSenders'>> & {
  recentRefusals?: Refusal[];
  unauthenticatedSenders?: UnauthenticatedSender[];
};

export interface Resource {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: {
    url?: string;
    credentialsSecret?: string;
    integrationName?: string;
    username?: string;
    conditions?: Condition[];
    activity?: Activity;
    [k: string]: unknown;
  };
}

export const PLURALS = ['webhookintegrations', 'apikeys'] as const;
export type Plural = (typeof PLURALS)[number];
export const KIND_OF: Record<Plural, string> = { webhookintegrations: 'WebhookIntegration', apikeys: 'ApiKey' };
export const LABEL_OF: Record<Plural, string> = { webhookintegrations: 'Integration', apikeys: 'API key' };
