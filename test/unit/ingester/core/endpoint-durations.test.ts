/**
 * EndpointDurations (ingester/core/endpoint-durations.ts) is written as prom-client's Histogram
 * with the same buckets and observations is: the same text and the same JSON, so dashboards and
 * alerts read it unchanged.
 */
import { Histogram, Registry } from 'prom-client';
import { EndpointDurations } from '../../../../ingester/core/endpoint-durations.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const OBSERVED: Array<[string, number]> = [
  ['events', 0.0002],
  ['events', 0.0005],
  ['events', 0.003],
  ['metrics', 0.04],
  ['events', 7],
  ['other', 0],
  ['events', 2.5],
];

function both(): { ours: Registry; theirs: Registry; durations: EndpointDurations; histogram: Histogram<'endpoint'> } {
  const ours = new Registry();
  const theirs = new Registry();
  const name = 'intake_http_request_duration_seconds';
  const help = 'Time from request received to response sent, by endpoint.';
  const durations = new EndpointDurations(name, help, BUCKETS, [ours]);
  const histogram = new Histogram({ name, help, labelNames: ['endpoint'], buckets: BUCKETS, registers: [theirs] });
  return { ours, theirs, durations, histogram };
}

describe('EndpointDurations', () => {
  it('is written as prom-client writes its Histogram: text and JSON', async () => {
    const { ours, theirs, durations, histogram } = both();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    for (const [endpoint, seconds] of OBSERVED) {
      durations.observe(endpoint, seconds);
      histogram.observe({ endpoint }, seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('intake_http_request_duration_seconds_bucket{le="0.0005",endpoint="events"} 2');
    expect(text).toContain('intake_http_request_duration_seconds_bucket{le="+Inf",endpoint="events"} 5');
    expect(JSON.parse(JSON.stringify(await ours.getMetricsAsJSON()))).toEqual(
      JSON.parse(JSON.stringify(await theirs.getMetricsAsJSON())),
    );
  });

  it('refuses a duration that is not a number, as prom-client does; reset forgets every endpoint', async () => {
    const { ours, durations } = both();
    expect(() => durations.observe('events', Number.NaN)).toThrow(TypeError);
    durations.observe('events', 0.1);
    durations.reset();
    expect(await ours.metrics()).not.toContain('endpoint="events"');
  });
});
