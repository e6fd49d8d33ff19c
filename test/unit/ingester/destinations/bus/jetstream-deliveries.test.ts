import { consumerName, multiEventConsumerName } from '../../../../../ingester/destinations/bus/jetstream-deliveries.js';
import { DESTINATION_NAME_PATTERN } from '../../../../../ingester/destinations/settings.js';

describe('destination consumers', () => {
  it('keeps the name every release used for messages of one event', () => {
    expect(consumerName('tickets')).toBe('intake-tickets');
  });

  it('names the consumer of messages of several events so that no other destination can have that name', () => {
    expect(multiEventConsumerName('tickets')).toBe('intake-tickets_multi');
    // A destination called tickets-multi keeps consumers of its own.
    expect(consumerName('tickets-multi')).not.toBe(multiEventConsumerName('tickets'));
    const names = ['a', 'tickets', 'tickets-multi', 'multi', 'a-multi-multi', 'x'.repeat(63)];
    for (const n of names) expect(n).toMatch(new RegExp(DESTINATION_NAME_PATTERN));
    const all = names.flatMap((n) => [consumerName(n), multiEventConsumerName(n)]);
    expect(new Set(all).size).toBe(all.length);
    // A valid durable name: no dots, wildcards, spaces or path separators.
    for (const c of all) expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});
