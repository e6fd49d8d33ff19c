/**
 * A destination's namespaces on the bus: one that holds more than an eighth of the consumer's
 * max_ack_pending unacknowledged while another sends there gets a consumer of its own, from the
 * message at hand; from then on its messages from that sequence on are its own consumer's.
 */
import {
  NamespaceConsumers,
  namespaceConsumerName,
  namespaceOfConsumer,
} from '../../../../../ingester/destinations/bus/namespace-consumers.js';

const fetchMany = (n: NamespaceConsumers, namespace: string, from: number, count: number): void => {
  for (let seq = from; seq < from + count; seq++) n.fetched(namespace, seq);
};

describe('NamespaceConsumers', () => {
  it('opens a consumer for a namespace past its part of the room only while another namespace sends there', () => {
    let now = 0;
    const n = new NamespaceConsumers(1000, () => now);
    expect(n.idle).toBe(true);
    fetchMany(n, 'team-a', 1, 124);
    expect(n.shouldOpen('team-a')).toBe(false);
    n.fetched('team-a', 125);
    expect(n.idle).toBe(false);
    // Alone on the destination: its backlog holds no one up.
    expect(n.shouldOpen('team-a')).toBe(false);
    n.fetched('team-b', 500);
    expect(n.shouldOpen('team-a')).toBe(true);
    expect(n.shouldOpen('team-b')).toBe(false);
    // B sent more than 30 s ago: A is alone again.
    now += 30_001;
    expect(n.shouldOpen('team-a')).toBe(false);
  });

  it('counts only what is not acknowledged', () => {
    const n = new NamespaceConsumers(80);
    n.fetched('team-b', 1000);
    fetchMany(n, 'team-a', 1, 10);
    expect(n.shouldOpen('team-a')).toBe(true);
    n.settled('team-a', 3);
    expect(n.shouldOpen('team-a')).toBe(false);
    // Not crowded any more: nothing is looked at (B holds one, no consumer of its own).
    expect(n.idle).toBe(true);
  });

  it('makes one at a time, and leaves the namespace’s messages from its start to it', () => {
    const n = new NamespaceConsumers(80);
    n.fetched('team-b', 1000);
    fetchMany(n, 'team-a', 1, 10);
    n.beginOpening('team-a');
    expect(n.shouldOpen('team-a')).toBe(false);
    expect(n.found('team-a', 11)).toBe(true);
    n.endOpening('team-a');
    expect(n.found('team-a', 11)).toBe(false);
    expect(n.isTheirs('team-a', 10)).toBe(false);
    expect(n.isTheirs('team-a', 11)).toBe(true);
    expect(n.isTheirs('team-b', 11)).toBe(false);
    expect(n.shouldOpen('team-a')).toBe(false);
    expect([...n.known]).toEqual([['team-a', 11]]);
    expect(n.idle).toBe(false);
  });

  it('tries again 5 s after a failed attempt, not on every message', () => {
    let now = 0;
    const n = new NamespaceConsumers(80, () => now);
    n.fetched('team-b', 1000);
    fetchMany(n, 'team-a', 1, 10);
    n.beginOpening('team-a');
    n.endOpening('team-a');
    expect(n.shouldOpen('team-a')).toBe(false);
    now += 5_000;
    n.fetched('team-b', 1001);
    expect(n.shouldOpen('team-a')).toBe(true);
  });

  it('stays bounded when messages settled on another replica are never settled here', () => {
    const n = new NamespaceConsumers(8);
    fetchMany(n, 'team-a', 1, 1000);
    n.fetched('team-b', 2000);
    // 2 x max_ack_pending at most: the oldest are forgotten.
    for (let seq = 985; seq <= 1000; seq++) n.settled('team-a', seq);
    expect(n.shouldOpen('team-a')).toBe(false);
  });

  it('names a namespace’s consumer after the destination’s, and reads the namespace back', () => {
    expect(namespaceConsumerName('intake-hooks', 'team-a')).toBe('intake-hooks@team-a');
    expect(namespaceOfConsumer('intake-hooks', 'intake-hooks@team-a')).toBe('team-a');
    expect(namespaceOfConsumer('intake-hooks', 'intake-hooks')).toBeUndefined();
    expect(namespaceOfConsumer('intake-hooks', 'intake-hooks-2@team-a')).toBeUndefined();
    expect(namespaceOfConsumer('intake-hooks', 'intake-hooks@')).toBeUndefined();
  });
});

it('remembers the newest sequence the destination’s consumer fetched (redeliveries come back older)', () => {
  const n = new NamespaceConsumers(80);
  n.saw(10);
  n.saw(12);
  n.saw(11);
  expect(n.newestSeq).toBe(12);
});
