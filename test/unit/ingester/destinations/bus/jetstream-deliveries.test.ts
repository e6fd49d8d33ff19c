import { consumerName } from '../../../../../ingester/destinations/bus/jetstream-deliveries.js';
import { DESTINATION_NAME_PATTERN } from '../../../../../ingester/destinations/settings.js';

describe('destination consumers', () => {
  it("names a destination's consumer intake-<destination>, a valid durable name for every destination name", () => {
    expect(consumerName('tickets')).toBe('intake-tickets');
    const names = ['a', 'tickets', 'tickets-multi', 'x'.repeat(63)];
    for (const n of names) expect(n).toMatch(new RegExp(DESTINATION_NAME_PATTERN));
    // No dots, wildcards, spaces or path separators.
    for (const n of names) expect(consumerName(n)).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});
