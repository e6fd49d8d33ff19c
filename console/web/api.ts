/**
 * The console server's JSON API, called with the session cookie and the session secret in
 * X-Intake-Session (session.ts); errors carry the server's message unchanged.
 */
import { sessionSecret } from './session.js';

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

export interface Refusal {
  time: string;
  status?: number;
  code?: string;
  reason?: string;
  message?: string;
  remoteAddress?: string;
  /** The User-Agent as the sender sent it: its claim. */
  userAgent?: string;
  deadLetterId?: string;
}

/** A sender refused before it proved credentials: only its address and a count (api/activity.ts). */
export interface UnauthenticatedSender {
  remoteAddress?: string;
  reason?: string;
  status?: number;
  code?: string;
  count?: number;
  firstTime?: string;
  lastTime?: string;
}

/**
 * status.activity as the operator writes it (api/activity.ts); every field optional, since the
 * page reads the status from the cluster as it finds it, unchecked.
 */
export interface Activity {
  lastEventTime?: string;
  lastRefusalTime?: string;
  eventsLastHour?: number;
  refusedLastHour?: number;
  refusalsLastHour?: Record<string, number>;
  recentRefusals?: Refusal[];
  unauthenticatedSenders?: UnauthenticatedSender[];
  updatedTime?: string;
}

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
