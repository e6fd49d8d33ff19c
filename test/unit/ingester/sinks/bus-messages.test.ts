import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import { busMessages, eventsOf } from '../../../../ingester/sinks/bus-messages.js';
import { readEventSubject } from '../../../../ingester/sinks/jetstream-stream.js';

const event = (id: string, integration = 'demo', pad = 0): NormalisedEvent =>
  ({
    id,
    namespace: 'team-a',
    integration,
    source: 'web-01',
    description: `line one\nline two ${'x'.repeat(pad)}`,
    received_at: '2026-11-26T00:00:00.000Z',
  }) as unknown as NormalisedEvent;

const decode = (data: Uint8Array): unknown => JSON.parse(Buffer.from(data).toString('utf8'));
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('bus messages', () => {
  it("sends a request's events as one message that reads back as the same events, in order", () => {
    const events = [event('a'), event('b'), event('c')];
    const [message, ...more] = busMessages('intake.events', events, 1 << 20);
    expect(more).toEqual([]);
    expect(message).toMatchObject({ subject: 'intake.events.team-a.demo', events: 3 });
    // A newline inside a field is escaped by JSON, so it never splits an event.
    expect(eventsOf(bytes(message?.payload as string)).map(decode)).toEqual(events);
  });

  it("keeps a single event's own id and text", () => {
    const e = event('only');
    expect(busMessages('intake.events', [e], 1 << 20)).toEqual([
      {
        id: 'only',
        namespace: 'team-a',
        integration: 'demo',
        subject: 'intake.events.team-a.demo',
        payload: JSON.stringify(e),
        events: 1,
      },
    ]);
  });

  it('names a message of several events by their ids, so a retried request makes the same message', () => {
    const first = busMessages('p', [event('a'), event('b')], 1 << 20)[0]?.id;
    expect(first).toMatch(/^m-[A-Za-z0-9_-]{43}$/);
    expect(busMessages('p', [event('a'), event('b')], 1 << 20)[0]?.id).toBe(first);
    expect(busMessages('p', [event('b'), event('a')], 1 << 20)[0]?.id).not.toBe(first);
    expect(busMessages('p', [event('a'), event('c')], 1 << 20)[0]?.id).not.toBe(first);
  });

  it('sends an event repeated within the request once', () => {
    const [message] = busMessages('p', [event('a'), event('b'), event('a')], 1 << 20);
    expect(message?.events).toBe(2);
    expect(eventsOf(bytes(message?.payload as string)).map((e) => (decode(e) as NormalisedEvent).id)).toEqual([
      'a',
      'b',
    ]);
  });

  it('cuts the events into messages of at most maxBytes; an event larger than that goes alone', () => {
    const events = Array.from({ length: 10 }, (_, i) => event(`e${i}`, 'demo', i === 7 ? 5000 : 200));
    const messages = busMessages('p', events, 1000);
    for (const m of messages) expect(m.subject).toBe('p.team-a.demo');
    for (const m of messages) if (m.events > 1) expect(Buffer.byteLength(m.payload)).toBeLessThanOrEqual(1000);
    expect(messages.find((m) => m.payload.length > 1000)?.events).toBe(1);
    expect(messages.flatMap((m) => eventsOf(bytes(m.payload)).map((e) => (decode(e) as NormalisedEvent).id))).toEqual(
      events.map((e) => e.id),
    );
    expect(messages.length).toBeGreaterThan(3);
  });

  it('starts a new message where the subject changes', () => {
    const messages = busMessages('p', [event('a', 'one'), event('b', 'one'), event('c', 'two')], 1 << 20);
    expect(messages.map((m) => [m.subject, m.events])).toEqual([
      ['p.team-a.one', 2],
      ['p.team-a.two', 1],
    ]);
  });

  it('reads any message as its events without copying, empty lines ignored', () => {
    const data = bytes('{"a":1}\n{"b":2}\n\n{"c":3}\n');
    const parts = eventsOf(data);
    expect(parts.map(decode)).toEqual([{ a: 1 }, { b: 2 }, { c: 3 }]);
    expect(parts[0]?.buffer).toBe(data.buffer);
    expect(eventsOf(bytes('{"x":1}')).map(decode)).toEqual([{ x: 1 }]);
    expect(eventsOf(new Uint8Array())).toEqual([]);
  });

  it("groups a request's events by the destinations their rules chose, each message's subject naming them", () => {
    const events = [event('a'), event('b'), event('c'), event('d'), event('e')];
    const decided = [['pager', 'tickets'], ['tickets'], ['tickets', 'pager'], [], ['tickets']];
    const messages = busMessages('intake.events', events, 1 << 20, decided);
    const read = messages.map((m) => ({
      where: readEventSubject('intake.events', m.subject),
      ids: eventsOf(bytes(m.payload)).map((e) => (decode(e) as { id: string }).id),
    }));
    expect(read).toEqual([
      { where: { namespace: 'team-a', integration: 'demo', decided: ['pager', 'tickets'] }, ids: ['a', 'c'] },
      { where: { namespace: 'team-a', integration: 'demo', onlyFor: 'tickets' }, ids: ['b', 'e'] },
      // Dropped by a rule: still on the stream (it was accepted), for no destination.
      { where: { namespace: 'team-a', integration: 'demo', decided: [] }, ids: ['d'] },
    ]);
    expect(messages.map((m) => m.subject)).toEqual([
      'intake.events.team-a.demo._.pager.tickets',
      'intake.events.team-a.demo.tickets',
      'intake.events.team-a.demo._',
    ]);
  });

  it('without decisions, keeps the subjects of an integration without rules', () => {
    expect(busMessages('intake.events', [event('a')], 1 << 20).map((m) => m.subject)).toEqual([
      'intake.events.team-a.demo',
    ]);
  });
});
