import {
  DoneEvents,
  MessageEventDelivery,
  MessageSettlement,
  type SettleableMessage,
} from '../../../../ingester/destinations/message-settlement.js';

function message(): SettleableMessage & { said: string[] } {
  const said: string[] = [];
  return {
    said,
    ack: () => void said.push('ack'),
    nak: (ms) => void said.push(`nak ${ms}`),
    term: (reason) => void said.push(`term ${reason}`),
  };
}

describe('message settlement', () => {
  it('holds the message when its events were handed back unsent, and naks it when any was really tried', () => {
    const held = { ...message(), hold: (ms: number) => void held.said.push(`hold ${ms}`) };
    const s = new MessageSettlement(held, 3, 2, undefined, new DoneEvents(10));
    s.hold(30_000, 'the circuit is open');
    s.delivered(1);
    expect(held.said).toEqual(['hold 30000']);
    const tried = { ...message(), hold: (ms: number) => void tried.said.push(`hold ${ms}`) };
    const t = new MessageSettlement(tried, 4, 2, undefined, new DoneEvents(10));
    t.hold(30_000, 'the circuit is open');
    t.retry(1000, 'HTTP 503');
    expect(tried.said).toEqual(['nak 30000']);
    // A queue without hold naks.
    const plain = message();
    new MessageSettlement(plain, 5, 1, undefined, new DoneEvents(10)).hold(500, 'the circuit is open');
    expect(plain.said).toEqual(['nak 500']);
  });

  it('acknowledges the message once every event is delivered, not before', () => {
    const m = message();
    const s = new MessageSettlement(m, 7, 3, undefined, new DoneEvents(10));
    s.delivered(0);
    s.delivered(2);
    expect(m.said).toEqual([]);
    s.delivered(1);
    expect(m.said).toEqual(['ack']);
  });

  it('acknowledges a mix of delivered and dead-lettered events; terminates when every one was dead-lettered', () => {
    const mixed = message();
    const s = new MessageSettlement(mixed, 1, 2, undefined, new DoneEvents(10));
    s.deadLettered(0, 'rejected');
    s.delivered(1);
    expect(mixed.said).toEqual(['ack']);
    const dead = message();
    const t = new MessageSettlement(dead, 2, 2, undefined, new DoneEvents(10));
    t.deadLettered(1, 'rejected');
    t.deadLettered(0, 'attempts_exhausted');
    expect(dead.said).toEqual(['term rejected']);
  });

  it('naks with the longest delay asked for when any event is retried, and the redelivery sends only the rest', () => {
    const memory = new DoneEvents(10);
    const first = message();
    const s = new MessageSettlement(first, 42, 4, undefined, memory);
    s.delivered(0);
    s.retry(900);
    s.deadLettered(2, 'rejected');
    s.retry(300);
    expect(first.said).toEqual(['nak 900']);
    expect([...(memory.of(42) ?? [])].sort()).toEqual([0, 2]);

    // The redelivery: events 1 and 3 again; 1 is retried once more, then 3 and 1 are delivered.
    const second = message();
    const again = new MessageSettlement(second, 42, 2, memory.of(42), memory);
    again.delivered(3);
    again.retry(100);
    expect(second.said).toEqual(['nak 100']);
    expect([...(memory.of(42) ?? [])].sort()).toEqual([0, 2, 3]);
    const third = message();
    new MessageSettlement(third, 42, 1, memory.of(42), memory).delivered(1);
    // Not terminated although nothing was delivered in this attempt alone: earlier attempts delivered.
    expect(third.said).toEqual(['ack']);
    expect(memory.of(42)).toBeUndefined();
  });

  it('acknowledges at once a redelivered message whose events were all settled', () => {
    const m = message();
    new MessageSettlement(m, 5, 0, new Set([0, 1]), new DoneEvents(10));
    expect(m.said).toEqual(['ack']);
  });

  it('hands out one event of a message, parsed once, and settles it through the message', async () => {
    const m = message();
    const settlement = new MessageSettlement(m, 9, 1, undefined, new DoneEvents(10));
    const json = new TextEncoder().encode('{"id":"e1","description":"é"}');
    const d = new MessageEventDelivery(json, 3, 0, settlement, async () => {}, 100);
    const first = d.event();
    expect(first).toMatchObject({ id: 'e1', description: 'é' });
    expect(d.event()).toBe(first);
    expect(d.attempt).toBe(3);
    await d.ack();
    expect(m.said).toEqual(['ack']);
  });

  it('retries an event whose dead letter could not be kept, and reports the failure', async () => {
    const m = message();
    const settlement = new MessageSettlement(m, 9, 1, undefined, new DoneEvents(10));
    const d = new MessageEventDelivery(
      '{"id":"e1"}',
      1,
      0,
      settlement,
      async () => {
        throw new Error('store down');
      },
      250,
    );
    await expect(d.deadLetter('http_400', 'no')).rejects.toThrow('store down');
    expect(m.said).toEqual(['nak 250']);
  });

  it('remembers a bounded number of messages, the oldest forgotten first', () => {
    const memory = new DoneEvents(2);
    for (const seq of [1, 2, 3]) {
      const s = new MessageSettlement(message(), seq, 2, undefined, memory);
      s.delivered(0);
      s.retry(10);
    }
    expect(memory.size).toBe(2);
    expect(memory.of(1)).toBeUndefined();
    expect(memory.of(3)).toEqual(new Set([0]));
  });
});
