import type { NormalisedEvent } from '../../../../ingester/core/event.js';
import {
  eventIdOf,
  packReceivedAt,
  parseStored,
  queuedEvent,
  receivedAtMs,
} from '../../../../ingester/destinations/destination.js';

const event = (over: Partial<NormalisedEvent> = {}): NormalisedEvent =>
  ({
    id: 'e1',
    integration: 'demo',
    namespace: 'default',
    received_at: '2026-11-26T02:00:00.123Z',
    signature: 's',
    source: 'h',
    severity: 3,
    severity_name: 'minor',
    agent_time: '2026-11-26T01:59:59.000Z',
    custom_info: {},
    ...over,
  }) as NormalisedEvent;

describe('queued events', () => {
  it('reads received_at from the stored text and bytes without parsing them', () => {
    const e = event({ custom_info: { received_at: '1999-01-01T00:00:00.000Z' } });
    const text = JSON.stringify(e);
    const unparsable = (): NormalisedEvent => {
      throw new Error('parsed');
    };
    expect(receivedAtMs({ json: text, event: unparsable })).toBe(Date.parse('2026-11-26T02:00:00.123Z'));
    expect(receivedAtMs({ json: new TextEncoder().encode(text), event: unparsable })).toBe(
      Date.parse('2026-11-26T02:00:00.123Z'),
    );
  });

  it('parses the event when the stored text has no received_at it can read', () => {
    const e = event();
    expect(receivedAtMs({ json: '{"id":"e1"}', event: () => e })).toBe(Date.parse(e.received_at));
    expect(receivedAtMs({ json: '{"received_at":"not a date"}', event: () => e })).toBe(Date.parse(e.received_at));
  });

  it("reads a pack's received_at from its first event, for all of its events", () => {
    const first = new TextEncoder().encode(JSON.stringify(event()));
    const second = JSON.stringify(event({ id: 'e2', received_at: '2030-01-01T00:00:00.000Z' }));
    expect(packReceivedAt([first])).toBeUndefined();
    const shared = packReceivedAt([first, second]) as () => number;
    expect(shared()).toBe(Date.parse('2026-11-26T02:00:00.123Z'));
    // A queued event that carries the shared reader is not read on its own.
    const unparsable = (): NormalisedEvent => {
      throw new Error('parsed');
    };
    expect(receivedAtMs({ json: second, event: unparsable, sharedReceivedAtMs: shared })).toBe(
      Date.parse('2026-11-26T02:00:00.123Z'),
    );
    expect(receivedAtMs({ json: second, event: unparsable })).toBe(Date.parse('2030-01-01T00:00:00.000Z'));
  });

  it('reads the id from the start of the stored text and bytes without parsing them', () => {
    const text = JSON.stringify(event({ id: 'Zk3-_x', custom_info: { id: 'not this one' } }));
    const unparsable = (): NormalisedEvent => {
      throw new Error('parsed');
    };
    expect(eventIdOf({ json: text, event: unparsable })).toBe('Zk3-_x');
    expect(eventIdOf({ json: new TextEncoder().encode(text), event: unparsable })).toBe('Zk3-_x');
    // Not at the start, or holding an escape: the event is parsed.
    const other = event({ id: 'a"b' });
    expect(eventIdOf({ json: JSON.stringify(other), event: () => other })).toBe('a"b');
    expect(eventIdOf({ json: '{"source":"h","id":"x"}', event: () => event({ id: 'x' }) })).toBe('x');
    const bytes = new TextEncoder().encode('{"id":"é-1","source":"h"}');
    expect(eventIdOf({ json: bytes, event: unparsable })).toBe('é-1');
  });

  it('parses stored text and UTF-8 bytes', () => {
    const e = event({ description: 'é ✓' });
    expect(parseStored(new TextEncoder().encode(JSON.stringify(e)))).toEqual(e);
    expect(parseStored(JSON.stringify(e))).toEqual(e);
    expect(queuedEvent(e).event()).toBe(e);
  });
});
