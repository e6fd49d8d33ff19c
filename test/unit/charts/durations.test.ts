/**
 * Durations in the chart's values: Go-style strings written to the ingester's config file and the
 * operator's flags; a user's values that still give a key of the earlier spelling (timeoutMs:
 * 2000) have it written instead of the new key's default beside it, so the ingester reads it with
 * a deprecation warning rather than stopping on two spellings with two values.
 */
import { parse } from 'yaml';
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: {
    template?: {
      spec?: { terminationGracePeriodSeconds?: number; containers?: Array<{ name: string; args?: string[] }> };
    };
  };
}

const render = (...set: string[]) => {
  const docs = renderChart<Doc>('intake', 'intake', [
    '--set',
    'sinks.jetstream.enabled=true',
    '--set',
    'spool.enabled=true',
    '--set',
    'ingester.remoteWrite.enabled=true',
    '--set',
    'ingester.remoteWrite.url=http://mimir:8080/api/v1/push',
    ...set.flatMap((s) => ['--set', s]),
  ]);
  const text = docs.find((d) => d.kind === 'ConfigMap' && d.data?.['intake.yaml'])?.data?.['intake.yaml'] ?? '';
  const ingester = docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-ingester'));
  const operator = docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-operator'));
  return {
    config: parse(text) as Record<string, Record<string, unknown>>,
    grace: ingester?.spec?.template?.spec?.terminationGracePeriodSeconds,
    operatorArgs: operator?.spec?.template?.spec?.containers?.[0]?.args ?? [],
  };
};

describe('chart: durations', () => {
  it('writes every duration as a Go-style string by default', () => {
    const { config, grace, operatorArgs } = render();
    expect(config.limits).toMatchObject({ seriesTTL: '10m', headersTimeout: '10s', bodyRateGrace: '2s' });
    expect(config.authThrottle).toMatchObject({ window: '1m', block: '5m', failureDelay: '300ms' });
    expect(config.shutdown).toEqual({ drainDelay: '5s', timeout: '25s' });
    expect(config.sinks?.jetstream).toMatchObject({
      timeout: '2s',
      inFlightWait: '100ms',
      reconnectWait: '2s',
      streamConfig: { maxAge: '72h', duplicateWindow: '15m' },
    });
    expect(config.spool).toMatchObject({ replayBackoffMin: '200ms', replayBackoffMax: '30s' });
    expect(config.remoteWrite).toMatchObject({ flushInterval: '1s', maxSampleAge: '45m' });
    expect(config.mapping).toMatchObject({ timeout: '500ms' });
    expect(config.deadLetter).toMatchObject({
      path: '/var/lib/intake/deadletter/deadletters.sqlite',
      replayLease: '5m',
    });
    expect(JSON.stringify(config)).not.toMatch(/"\w+(Ms|Seconds)"/);
    expect(grace).toBe(35);
    expect(operatorArgs).toEqual(expect.arrayContaining(['--resync-period=5m', '--activity-interval=30s']));
  });

  it("writes a key of the earlier spelling a user's values still give, instead of the new key's default", () => {
    const { config, grace, operatorArgs } = render(
      'ingester.limits.headersTimeoutMs=12000',
      'ingester.shutdown.timeoutSeconds=40',
      'sinks.jetstream.timeoutMs=900',
      'sinks.jetstream.streamConfig.maxAgeSeconds=86400',
      'spool.replayBackoffMinMs=50',
      'ingester.remoteWrite.maxSampleAgeMs=600000',
      'ingester.mapping.timeoutMs=300',
      'ingester.deadLetter.replayLeaseSeconds=60',
      'operator.resyncPeriodSeconds=120',
    );
    expect(config.limits).toMatchObject({ headersTimeoutMs: 12000 });
    expect(config.limits).not.toHaveProperty('headersTimeout');
    expect(config.shutdown).toEqual({ drainDelay: '5s', timeoutSeconds: 40 });
    expect(config.sinks?.jetstream).toMatchObject({ timeoutMs: 900, streamConfig: { maxAgeSeconds: 86400 } });
    expect(config.sinks?.jetstream).not.toHaveProperty('timeout');
    expect(config.spool).toMatchObject({ replayBackoffMinMs: 50, replayBackoffMax: '30s' });
    expect(config.remoteWrite).toMatchObject({ maxSampleAgeMs: 600000 });
    expect(config.mapping).toEqual(expect.objectContaining({ timeoutMs: 300 }));
    expect(config.mapping).not.toHaveProperty('timeout');
    expect(config.deadLetter).toMatchObject({ replayLeaseSeconds: 60 });
    expect(grace).toBe(50); // 5s + 40s + 5s
    expect(operatorArgs).toContain('--resync-period=120'); // the operator reads it as seconds, with a warning
  });

  it('sizes the grace period from durations in any unit', () => {
    expect(render('ingester.shutdown.drainDelay=1m30s', 'ingester.shutdown.timeout=1500ms').grace).toBe(97);
  });
});
