/**
 * The destination pages' data: a namespace's Destinations and the platform's destinations, pause
 * and resume, and one destination's dead letters and bulk replays, from the console server
 * (console/server/endpoints/destinations.ts). Shapes come from the API's types; the status is read
 * from the cluster as found, so every field is optional.
 */
import type { BulkReplayProgress } from '../../../api/bulk-replay.js';
import type { DeliveryAnswer, DestinationDelivery } from '../../../api/v1alpha1/types.js';
import { inertText } from '../../../common/sender-text.js';
import { api } from './api.js';
import type { DestinationResource } from './destination-state.js';

export type { DeliveryAnswer, DestinationDelivery };
export { chartMinutes, circuitOf, pausedOf, targetOf, type DestinationResource } from './destination-state.js';

/** A platform destination as the ingesters describe it (GET /destinations on their admin listener). */
export interface PlatformDestination {
  name: string;
  kind?: string;
  circuit?: string;
  paused?: boolean;
  reason?: string;
  [k: string]: unknown;
}

/** A platform destination's pause as one cell says it: `no`, `yes`, or `yes (why)`. */
export const platformPausedText = (d: PlatformDestination): string =>
  d.paused ? `yes${d.reason ? ` (${inertText(d.reason)})` : ''}` : 'no';

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

/** A bulk replay's progress, as the ingesters report it. */
export type ReplayProgress = BulkReplayProgress;

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
