/**
 * Where captures are kept (docs/inspector.md): in this replica's memory without the bus, in a
 * JetStream stream every replica reads with it (bus-store.ts). Both keep attempts apart from the
 * request they belong to (a later replica records them) and join them when a request is read.
 */
import type { CapturedRequest, DeliveryAttempt } from '../../api/inspector.js';
import type { AnsweredDelivery } from '../destinations/delivery-attempts.js';

/** One delivery attempt as recorded: against an event id, joined to its request when read. */
export type RecordedAttempt = AnsweredDelivery;

export interface Integration {
  namespace: string;
  integration: string;
}

export interface InspectorStore {
  /** Keeps a capture, the integration's `keep` newest at most; best effort (one that does not fit is left out). */
  put(c: CapturedRequest, keep: number): void;
  /** Records a delivery attempt of one of the integration's events. */
  attempt(where: Integration, a: RecordedAttempt): void;
  /** The integration's captures, newest first, `keep` at most, each with its attempts. */
  list(where: Integration, keep: number): Promise<CapturedRequest[]>;
  close(): Promise<void>;
}

/** Attempts kept per integration: several per event and destination. */
export const attemptsKept = (keep: number): number => keep * 8;

/** Each request with the attempts of its events (oldest first), `event` being the event's index. */
export function withAttempts(requests: CapturedRequest[], attempts: readonly RecordedAttempt[]): CapturedRequest[] {
  const byEvent = new Map<string, { request: CapturedRequest; index: number }>();
  for (const request of requests)
    (request.events ?? []).forEach((e, index) => {
      const id = (e as { id?: unknown }).id;
      if (typeof id === 'string') byEvent.set(id, { request, index });
    });
  const out = new Map<CapturedRequest, DeliveryAttempt[]>();
  for (const { eventId, ...a } of attempts) {
    const at = byEvent.get(eventId);
    if (!at) continue;
    const list = out.get(at.request) ?? [];
    list.push({ event: at.index, ...a });
    out.set(at.request, list);
  }
  return requests.map((r) => {
    const found = out.get(r);
    return found ? { ...r, attempts: found.sort((x, y) => x.at.localeCompare(y.at)) } : r;
  });
}
