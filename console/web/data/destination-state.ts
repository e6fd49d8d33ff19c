/**
 * What the destination pages derive from a Destination as read from the cluster: whether it is
 * paused and why, the circuit's state, where it sends to, and its minutes in the minute chart's shape.
 */
import type { ActivityMinutes } from '../../../api/activity.js';
import type { DestinationDelivery, DestinationMinutes } from '../../../api/v1alpha1/types.js';
import type { Condition, Resource } from './resources.js';

/** A team's Destination as the pages read it. */
export type DestinationResource = Resource & {
  spec?: { suspend?: boolean; http?: { url?: string }; alertmanager?: { urls?: string[] }; [k: string]: unknown };
  status?: Resource['status'] & { destinationName?: string; delivery?: Partial<DestinationDelivery> };
};

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
