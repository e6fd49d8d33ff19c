/**
 * How events travel on the bus: the events of one request (one namespace and integration, so one
 * subject) go as one message, their JSON texts joined by newlines, rather than one message each.
 * nats-server stores, deduplicates and acknowledges per message, and the consumer parses, tracks
 * and acknowledges per message: measured, a 100-event request cost the bus and both ends about a
 * hundred times that work.
 *
 * - A message's text: each event's JSON.stringify (which never holds a raw newline) followed by
 *   `\n` between them. A message of one event is that event's JSON alone.
 * - Its `Nats-Msg-Id`: the event's id for one event; for several, `m-` and a SHA-256 over their
 *   ids. A sender's retry of the same request makes the same events with the same ids, so the
 *   same messages, which the stream's duplicate window stores once.
 * - An event repeated within a request (the same id) is sent once, as the bus used to store it
 *   once.
 * - A message never exceeds the server's max_payload: a request's events are cut into as many
 *   messages as that takes.
 * - Its subject: `<prefix>.<namespace>.<integration>`, however many events it holds.
 */
import { hash } from 'node:crypto';
import type { NormalisedEvent } from '../core/event.js';
import { eventSubject } from './jetstream-stream.js';
import type { DecidedDestinations } from './sink.js';

/** Events of one namespace and integration packed together: a bus message, an outbox row. */
export interface EventPack {
  /** The `Nats-Msg-Id` (the outbox row's id). */
  id: string;
  namespace: string;
  integration: string;
  payload: string;
  /** How many events the payload holds. */
  events: number;
}

export interface BusMessage extends EventPack {
  subject: string;
}

const NEWLINE = 0x0a;

/**
 * The request's events as bus messages of at most maxBytes each (an event larger than that goes
 * alone). With `decided` (the routing rules' choice per event), the events are grouped by the
 * destinations chosen, and each message's subject names them (jetstream-stream.ts EventSubject).
 */
export function busMessages(
  prefix: string,
  events: readonly NormalisedEvent[],
  maxBytes: number,
  decided?: DecidedDestinations,
): BusMessage[] {
  const messages = (list: readonly NormalisedEvent[], to?: readonly string[]): BusMessage[] =>
    packEvents(list, maxBytes).map((p) => ({
      ...p,
      subject: eventSubject(prefix, to === undefined ? p : { ...p, decided: to }),
    }));
  if (decided === undefined) return messages(events);
  const groups = new Map<string, { to: readonly string[]; events: NormalisedEvent[] }>();
  for (let i = 0; i < events.length; i++) {
    const to = [...new Set(decided[i] ?? [])].sort();
    const key = to.join('.');
    const group = groups.get(key);
    if (group) group.events.push(events[i] as NormalisedEvent);
    else groups.set(key, { to, events: [events[i] as NormalisedEvent] });
  }
  return [...groups.values()].flatMap((g) => messages(g.events, g.to));
}

/** Packs of at most maxBytes each, one namespace and integration per pack, repeated ids left out. */
export function packEvents(events: readonly NormalisedEvent[], maxBytes: number): EventPack[] {
  const packs: EventPack[] = [];
  const seen = new Set<string>();
  let namespace = '';
  let integration = '';
  let texts: string[] = [];
  let ids: string[] = [];
  let bytes = 0;
  const close = (): void => {
    if (texts.length === 0) return;
    const id = ids.length === 1 ? (ids[0] as string) : `m-${hash('sha256', ids.join(','), 'base64url')}`;
    packs.push({ id, namespace, integration, payload: texts.join('\n'), events: texts.length });
    texts = [];
    ids = [];
    bytes = 0;
  };
  for (const e of events) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    const text = JSON.stringify(e);
    // Counted as at most 3 bytes a character (UTF-8 of UTF-16), exactly only near the limit: a
    // message may end up shorter than it could be, never longer.
    let size = text.length * 3 + 1;
    if (bytes + size > maxBytes + 1) size = Buffer.byteLength(text) + 1;
    if (e.namespace !== namespace || e.integration !== integration || bytes + size > maxBytes + 1) {
      close();
      namespace = e.namespace;
      integration = e.integration;
    }
    texts.push(text);
    ids.push(e.id);
    bytes += size;
  }
  close();
  return packs;
}

/** The events a message holds, each as its own bytes (views over the message, no copy). */
export function eventsOf(data: Uint8Array): Uint8Array[] {
  const events: Uint8Array[] = [];
  let from = 0;
  for (let at = data.indexOf(NEWLINE); at >= 0; at = data.indexOf(NEWLINE, from)) {
    if (at > from) events.push(data.subarray(from, at));
    from = at + 1;
  }
  if (from < data.length) events.push(data.subarray(from));
  return events;
}

/** The events a message held as text (an outbox row) holds, each as its own text. */
export function eventTextsOf(text: string): string[] {
  return text.split('\n').filter((line) => line.length > 0);
}
