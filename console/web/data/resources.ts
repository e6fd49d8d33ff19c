/**
 * Integrations and API keys as the pages read and write them: the objects' shape as the page finds
 * them in the cluster (unchecked, so every status field is optional), and the calls that read,
 * write and reveal them, each made as the user by the console server.
 */
import type {
  Activity as ApiActivity,
  RecentRefusal,
  UnauthenticatedSender as ApiSender,
} from '../../../api/activity.js';
import type { Credentials } from '../../shared/console-api.js';
import { api } from './api.js';

export const PLURALS = ['webhookintegrations', 'apikeys'] as const;
export type Plural = (typeof PLURALS)[number];
export const isPlural = (s: string | undefined): s is Plural => PLURALS.includes(s as Plural);
export const KIND_OF: Record<Plural, string> = { webhookintegrations: 'WebhookIntegration', apikeys: 'ApiKey' };
export const LABEL_OF: Record<Plural, string> = { webhookintegrations: 'Integration', apikeys: 'API key' };

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/*
 * status.activity as the operator writes it, in the shapes api/activity.ts defines; every field
 * optional but a refusal's time, since the page reads the status from the cluster as it finds it.
 */
/** One refusal of an authenticated request. */
export type Refusal = Partial<RecentRefusal> & Pick<RecentRefusal, 'time'>;
/** A sender refused before it proved credentials: only its address and a count. */
export type UnauthenticatedSender = Partial<ApiSender>;
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

export const resourcePath = (ns: string, plural: string, name?: string): string =>
  `/api/namespaces/${encodeURIComponent(ns)}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;

export const readResource = (ns: string, plural: Plural, name: string) =>
  api<Resource>('GET', resourcePath(ns, plural, name));
export const createResource = (ns: string, plural: Plural, body: unknown) =>
  api<Resource>('POST', resourcePath(ns, plural), body);
export const replaceResource = (ns: string, plural: Plural, name: string, body: unknown) =>
  api<Resource>('PUT', resourcePath(ns, plural, name), body);
export const deleteResource = (ns: string, plural: Plural, name: string) =>
  api('DELETE', resourcePath(ns, plural, name));
/** A JSON merge patch: `null` removes a field. */
export const patchResource = (ns: string, plural: Plural, name: string, patch: unknown) =>
  api<Resource>('PATCH', resourcePath(ns, plural, name), patch);

/** Asks the operator for new secrets (it watches the annotation). */
export const requestRotation = (ns: string, plural: Plural, name: string) =>
  patchResource(ns, plural, name, { metadata: { annotations: { 'intake.dev/rotate': new Date().toISOString() } } });
export const setSuspended = (ns: string, plural: Plural, name: string, suspend: boolean) =>
  patchResource(ns, plural, name, { spec: { suspend: suspend ? true : null } });

/** The credentials, if the user's own token may read their Secret. */
export const readCredentials = (ns: string, plural: Plural, name: string) =>
  api<Credentials>('GET', `${resourcePath(ns, plural, name)}/credentials`);
