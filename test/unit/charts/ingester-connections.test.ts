/**
 * The ingester's connection cap (ingester.limits.maxConnections) sized for the pod's memory limit:
 * the ingester's own default follows the open-files limit, about a million in many containers, and
 * each connection holding its headers back costs about 10 KiB, far past the chart's memory limit.
 */
import { parse } from 'yaml';
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
}

const ingesterLimits = (...set: string[]): Record<string, unknown> => {
  const config = renderChart<Doc>('intake', 'intake', set).find(
    (d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'] !== undefined && d.metadata.name.includes('ingester'),
  );
  if (!config) throw new Error('no ingester ConfigMap rendered');
  return (parse(config.data!['intake.yaml']!) as { limits: Record<string, unknown> }).limits;
};

describe("chart: the ingester's connection cap", () => {
  it('by default fits an eighth of the memory limit at 10 KiB a connection', () => {
    const limits = ingesterLimits();
    expect(limits.maxConnections).toBe(Math.floor((512 * 1024 * 1024) / 8 / 10240));
    // At 10 KiB each, every connection held at once stays within an eighth of the 512Mi limit.
    expect((limits.maxConnections as number) * 10240).toBeLessThanOrEqual((512 * 1024 * 1024) / 8);
    // The per-address bound stays the ingester's (half of it).
    expect(limits.maxConnectionsPerAddress).toBeUndefined();
  });

  it.each([
    ['256Mi', 3276],
    ['1Gi', 13107],
    ['1.5Gi', 19660],
    ['2G', 24414],
    ['100000000', 1220],
    ['8Mi', 256],
  ])('follows resources.limits.memory %s: %d', (memory, expected) => {
    expect(ingesterLimits('--set', `ingester.resources.limits.memory=${memory}`).maxConnections).toBe(expected);
  });

  it('takes 8192 without a memory limit, a number as given, and 0 for the ingester default', () => {
    expect(ingesterLimits('--set', 'ingester.resources.limits=null').maxConnections).toBe(8192);
    expect(ingesterLimits('--set', 'ingester.limits.maxConnections=1000').maxConnections).toBe(1000);
    expect(ingesterLimits('--set', 'ingester.limits.maxConnections=0')).not.toHaveProperty('maxConnections');
  });

  it('refuses a negative cap', () => {
    expect(() => ingesterLimits('--set', 'ingester.limits.maxConnections=-1')).toThrow(/maxConnections/);
  });
});
