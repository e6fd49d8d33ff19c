/**
 * The destination pages' data: a namespace's Destinations and the platform's destinations, pause
 * and resume, and one destination's dead letters and bulk replays, from the console server
 * (console/server/routes/destinations.ts). Shapes come from the API's types; the status is read
 * from the cluster as found, so every field is optional.
 */
import type { ActivityMinutes } from '../../../api/activity.js';
import type { DeliveryAnswer, DestinationDelivery, DestinationMinutes } from '../../../api/v1alpha1/types.js';
import { api, type Condition, type Resource } from '../api.js';

export type { DeliveryAnswer, DestinationDelivery };

/** A team's Destination as the pages read it. */
export type DestinationResource = Resource & {
  spec?: { suspend?: boolean; http?: { url?: string }; alertmanager?: { urls?: string[] }; [k: string]: unknown };
  status?: Resource['status'] & { destinationName?: string; delivery?: Partial<DestinationDelivery> };
};

/** A platform destination as the ingesters describe it (GET /destinations on their admin listener). */
export interface PlatformDestination {
  name: string;
  kind?: string;
  circuit?: string;
  paused?: boolean;
  reason?: string;
  [k: string]: unknown;
}

export interface DestinationList {
  items: DestinationResource[];
  /** The platform's destinations, or why the console cannot know them. */
  platform: { items?: PlatformDestination[]; message?: string };
}

/** Which destinations a page is about: a team's own or the platform's (read-only but for its dead letters). */
export type DestinationScope = 'destinations' | 'platform-destinations';

export interface DeadLetterEntry {
  id: string;
  integration: string;
  destination?: string;
  reason: string;
  error?: string;
  attempts?: number;
  at: string;
  eventId?: string;
}

export interface DeadLetters {
  destination: string;
  count: number;
  limit: number;
  entries: DeadLetterEntry[];
  mayReplay: boolean;
}

/** The filters of a replay the page may give; the namespace and the destination are the page's. */
export interface ReplayFilter {
  integration?: string;
  reason?: string;
  /** RFC 3339 times, or a duration ago such as `2h`. */
  since?: string;
  until?: string;
  rate?: number;
}

/** A bulk replay's progress (the ingesters' BulkReplayProgress). */
export interface ReplayProgress {
  id: string;
  state: 'running' | 'done' | 'cancelled' | 'failed';
  filter: Record<string, unknown>;
  rate?: number;
  startedAt: string;
  finishedAt?: string;
  matched: number;
  replayed: number;
  failed: number;
  skipped: number;
  remaining: number;
  message?: string;
  failures: Array<{ id: string; message: string }>;
}

const nsPath = (ns: string) => `/api/namespaces/${encodeURIComponent(ns)}`;
const onePath = (ns: string, scope: DestinationScope, name: string, rest = '') =>
  `${nsPath(ns)}/${scope}/${encodeURIComponent(name)}${rest}`;

export const listDestinations = (ns: string) => api<DestinationList>('GET', `${nsPath(ns)}/destinations`);
export const getDestination = (ns: string, name: string) =>
  api<DestinationResource>('GET', onePath(ns, 'destinations', name));
export const getPlatformDestination = (ns: string, name: string) =>
  api<PlatformDestination | undefined>('GET', onePath(ns, 'platform-destinations', name));
export const setPaused = (ns: string, name: string, paused: boolean) =>
  api<DestinationResource>('POST', onePath(ns, 'destinations', name, paused ? '/pause' : '/resume'));

export function listDeadLetters(ns: string, scope: DestinationScope, name: string, filter: ReplayFilter) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v !== undefined && v !== '' && k !== 'rate') q.set(k, String(v));
  return api<DeadLetters>('GET', onePath(ns, scope, name, `/deadletters${q.size ? `?${q}` : ''}`));
}
export const listReplays = (ns: string, scope: DestinationScope, name: string) =>
  api<{ replays: ReplayProgress[] }>('GET', onePath(ns, scope, name, '/replays'));
export const startReplay = (ns: string, scope: DestinationScope, name: string, filter: ReplayFilter) =>
  api<ReplayProgress>('POST', onePath(ns, scope, name, '/replays'), filter);
export const getReplay = (ns: string, scope: DestinationScope, name: string, id: string) =>
  api<ReplayProgress>('GET', onePath(ns, scope, name, `/replays/${encodeURIComponent(id)}`));
export const cancelReplay = (ns: string, scope: DestinationScope, name: string, id: string) =>
  api<ReplayProgress>('POST', onePath(ns, scope, name, `/replays/${encodeURIComponent(id)}/cancel`));

const condition = (r: DestinationResource, type: string): Condition | undefined =>
  r.status?.conditions?.find((c) => c.type === type);

/**
 * Whether events are held: spec.suspend (what the user set, shown at once) or the Paused condition
 * for another cause (what the operator reports: an auto-pause), with why.
 */
export function pausedOf(r: DestinationResource): { paused: boolean; why: string } {
  if (r.spec?.suspend === true) return { paused: true, why: 'Suspended' };
  // A Paused condition from spec.suspend lags a resume until the operator writes again: only
  // another cause (an auto-pause) holds against what the spec says now.
  const c = condition(r, 'Paused');
  if (c?.status === 'True' && c.reason !== 'Suspended') return { paused: true, why: c.reason ?? 'Paused' };
  return { paused: false, why: '' };
}

/** The circuit breaker's state from the CircuitOpen condition: its reason (Closed, Open, HalfOpen), or Unknown. */
export function circuitOf(r: DestinationResource): { state: string; message: string } {
  const c = condition(r, 'CircuitOpen');
  if (!c || c.status === 'Unknown' || !c.reason) return { state: 'Unknown', message: c?.message ?? 'not reported' };
  return { state: c.reason, message: c.message ?? '' };
}

/** Where a destination sends to, for the list. */
export function targetOf(r: DestinationResource): string {
  const spec = r.spec ?? {};
  if (spec.http?.url) return spec.http.url;
  if (spec.alertmanager?.urls?.length) return spec.alertmanager.urls.join(', ');
  return '';
}

/** status.delivery.minutes in the shape the minute chart draws: delivered up, failed down. */
export function chartMinutes(m: Partial<DestinationMinutes> | undefined): ActivityMinutes | undefined {
  if (!m?.start || !Array.isArray(m.delivered) || !Array.isArray(m.failed)) return undefined;
  return { start: m.start, events: m.delivered, refused: m.failed };
}
