/**
 * Every preset on its tool's own payload, through the ingest server: the fixture's firing and
 * resolved payloads become the expected events (resolved: severity 0, same signature), and a
 * malformed payload of that tool gets 422 and lands in the dead letter.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { firstDifference } from '../../../../api/mapping/engine.js';
import { PRESET_NAMES } from '../../../../api/mapping/presets.js';
import type { Route } from '../../../../api/route.js';
import { ROOT } from '../../../support/paths.js';
import { DEMO_AUTH, harness } from '../harness.js';

interface Fixture {
  source: string;
  cases: Array<{ input: unknown; expect: Array<Record<string, unknown>> }>;
  malformed: unknown;
}

const fixture = (preset: string): Fixture =>
  JSON.parse(readFileSync(join(ROOT, 'test/unit/api/mapping/fixtures', `${preset}.json`), 'utf8')) as Fixture;

const mappedRoute = (preset: string): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name: 'demo',
  namespace: 'default',
  credentials: [{ username: 'demo', secret: { plain: 'demo-password' } }],
  mapping: { preset },
});

describe.each(PRESET_NAMES)('preset %s', (preset) => {
  const f = fixture(preset);

  it.each(f.cases.map((c, i) => [i, c] as const))('maps fixture case %i to the expected events', async (_i, c) => {
    const h = await harness({ routes: [mappedRoute(preset)] });
    const res = await h.postEvents(c.input);
    expect(res.statusCode).toBe(200);
    expect(h.sink.events).toHaveLength(c.expect.length);
    c.expect.forEach((expected, j) => expect(firstDifference(expected, h.sink.events[j], '')).toBeUndefined());
  });

  it('gives the resolved payload severity 0 and the firing signature', () => {
    const signatures = f.cases.map((c) => c.expect[0]?.signature);
    const resolved = f.cases.find((c) => c.expect.some((e) => e.severity === 0));
    expect(resolved).toBeDefined();
    expect(new Set(signatures.slice(0, 2)).size).toBe(1);
  });

  it('answers 422 to a malformed payload and keeps it in the dead letter', async () => {
    const h = await harness({ routes: [mappedRoute(preset)] });
    const res = await h.postEvents(f.malformed);
    expect(res.statusCode).toBe(422);
    const body = res.json() as { code: string; message: string; errors: unknown[] };
    expect(body.code).toBe('MAPPING_FAILED');
    expect(body.message).toContain(`preset ${preset}`);
    expect(h.sink.events).toHaveLength(0);
    const kept = await h.deadLetter.list({ limit: 1000 });
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ integration: 'demo', namespace: 'default', payload: f.malformed });
    expect(res.headers['x-intake-dead-letter-id']).toBe(kept[0]?.id);
  });
});

it('has a fixture for every preset', () => {
  for (const preset of PRESET_NAMES) expect(fixture(preset).cases.length).toBeGreaterThanOrEqual(2);
  expect(DEMO_AUTH).toMatch(/^Basic /);
});
