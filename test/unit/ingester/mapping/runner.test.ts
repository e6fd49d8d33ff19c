/**
 * A tenant's expression evaluated elsewhere (the ingester's worker threads), seen from the request
 * path with a fake runner: what it is given, what it is charged, and a full queue.
 */
import {
  MappingBusy,
  type ExpressionRunner,
  type MappingLimits,
  type MappingResult,
} from '../../../../api/mapping/engine.js';
import type { Route } from '../../../../api/route.js';
import { DEMO_AUTH, harness } from '../harness.js';

const custom = (expression: string): Route[] => [
  {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'demo',
    namespace: 'team-a',
    credentials: [{ username: 'demo', secret: { plain: 'demo-password' } }],
    mapping: { expression },
  },
];

class FakeRunner implements ExpressionRunner {
  calls: Array<{ source: string; json: string }> = [];
  constructor(private readonly answer: (json: string) => Promise<MappingResult>) {}
  run(source: string, _limits: MappingLimits, json: Uint8Array): Promise<MappingResult> {
    const text = Buffer.from(json).toString('utf8');
    this.calls.push({ source, json: text });
    return this.answer(text);
  }
}

describe('an expression evaluated by a runner', () => {
  it('gets the body bytes as sent (not serialised again) and is charged the CPU time it reports', async () => {
    const runner = new FakeRunner(async () => ({ items: [{ source: 'a', severity: 1 }], cpuMs: 12, outputBytes: 30 }));
    const h = await harness({ routes: custom('{"source": host, "severity": 1}'), mappingRunner: runner });
    const sent = '{ "host" : "a",\n  "extra": [1, 2] }';
    const res = await h.postEvents(sent);
    expect(res.statusCode).toBe(200);
    expect(runner.calls).toEqual([{ source: '{"source": host, "severity": 1}', json: sent }]);
    expect(h.sink.events.map((e) => e.source)).toEqual(['a']);
    expect(await h.registry.getSingleMetricAsString('intake_mapping_cpu_seconds_total')).toContain(
      'intake_mapping_cpu_seconds_total{integration="demo",namespace="team-a"} 0.012',
    );
  });

  it('a full queue is 503 MAPPING_BUSY with Retry-After: nothing kept, and the dry run says the same', async () => {
    const runner = new FakeRunner(async () => {
      throw new MappingBusy('64 payloads are waiting for a mapping worker (mapping.maxQueued 64); retry later', 1);
    });
    const h = await harness({ routes: custom('{"source": host, "severity": 1}'), mappingRunner: runner });
    const res = await h.postEvents({ host: 'a' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({ code: 'MAPPING_BUSY', message: expect.stringContaining('mapping.maxQueued') });
    expect(await h.deadLetter.list({ limit: 10 })).toHaveLength(0);
    const dry = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo?dryRun=true',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
      payload: { host: 'a' },
    });
    expect(dry.statusCode).toBe(503);
  });
});
