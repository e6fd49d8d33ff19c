/**
 * The events of the destinations benchmark, as its runner sends them: number n is a new alert
 * (its own signature). bench/destinations/alertmanager-alone.ts builds Alertmanager's ceiling from the same.
 */
export const destinationEvent = (n: number): Record<string, unknown> => ({
  source: `host-${n % 500}`,
  signature: `sig-${n}`,
  severity: 1 + (n % 5),
  type: 'Bench',
  description: `event ${n}`,
});
