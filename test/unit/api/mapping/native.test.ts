/**
 * The native Alertmanager/Grafana presets must produce exactly what their JSONata expressions
 * produce: compared on the shipped fixtures and on generated payloads with missing, empty and
 * odd fields.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonata from 'jsonata';
import { NATIVE_PRESETS } from '../../../../api/mapping/native.js';
import { PRESETS } from '../../../../api/mapping/presets.js';

const FIXTURES = join(process.cwd(), 'test/unit/api/mapping/fixtures');

async function reference(
  preset: 'alertmanager' | 'grafana',
  body: unknown,
): Promise<{ value?: unknown; code?: string }> {
  try {
    const out = await jsonata(PRESETS[preset].expression).evaluate(body);
    return { value: JSON.parse(JSON.stringify(out === undefined ? [] : Array.isArray(out) ? out : [out])) };
  } catch (err) {
    return { code: (err as { code?: string }).code };
  }
}

function native(preset: 'alertmanager' | 'grafana', body: unknown): { value?: unknown; code?: string } {
  try {
    return { value: JSON.parse(JSON.stringify((NATIVE_PRESETS[preset] as (b: unknown) => unknown[])(body))) };
  } catch (err) {
    return { code: (err as { code?: string }).code };
  }
}

/** A small deterministic generator, so a failure names a reproducible case. */
function* payloads(seed: number, count: number): Generator<unknown> {
  // mulberry32: small, well-distributed, deterministic.
  let s = seed >>> 0;
  const rnd = (n: number): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)] as T;
  const maybe = <T>(v: T): T | undefined => (rnd(3) === 0 ? undefined : v);
  const text = ['', 'web-1', 'node', 'HighCPU', 'Disk full on /var', 'a=b,c'] as const;
  for (let i = 0; i < count; i++) {
    const alerts = Array.from({ length: 1 + rnd(4) }, () => {
      const labels: Record<string, unknown> = {};
      for (const k of ['alertname', 'instance', 'host', 'job', 'severity', 'zone', 'team']) {
        const v = maybe(pick([...text, 'CRITICAL', 'Warning', 'info', 'page', 'weird']));
        if (v !== undefined) labels[k] = v;
      }
      const annotations: Record<string, unknown> = {};
      for (const k of ['summary', 'description', 'message']) {
        const v = maybe(pick(text));
        if (v !== undefined) annotations[k] = v;
      }
      const alert: Record<string, unknown> = {
        status: maybe(pick(['firing', 'resolved', 'other'])),
        labels: rnd(8) === 0 ? undefined : labels,
        annotations: rnd(8) === 0 ? undefined : annotations,
        startsAt: maybe('2026-11-22T20:43:01.316853583Z'),
        endsAt: maybe(pick(['0001-01-01T00:00:00Z', '2026-11-22T20:43:06Z'])),
        generatorURL: maybe(pick(['', 'http://prom/graph'])),
        fingerprint: maybe(pick(['', '61a934e31c3bc048'])),
        dashboardURL: maybe('http://grafana/d/x'),
        valueString: maybe('[ var=A value=3 ]'),
      };
      return JSON.parse(JSON.stringify(alert)) as unknown;
    });
    yield JSON.parse(
      JSON.stringify({
        receiver: maybe('intake'),
        status: 'firing',
        alerts,
        groupKey: maybe('{}:{alertname="HighCPU"}'),
        version: '4',
      }),
    );
  }
}

describe.each([['alertmanager'], ['grafana']] as const)('native preset %s', (preset) => {
  it('equals the JSONata preset on the fixture', async () => {
    const fixture = JSON.parse(readFileSync(join(FIXTURES, `${preset}.json`), 'utf8')) as {
      cases: Array<{ input: unknown }>;
      malformed: unknown;
    };
    for (const c of fixture.cases) expect(native(preset, c.input)).toEqual(await reference(preset, c.input));
    expect(native(preset, fixture.malformed)).toEqual(await reference(preset, fixture.malformed));
  });

  it('equals the JSONata preset on 300 generated payloads with missing, empty and odd fields', async () => {
    for (const body of payloads(preset === 'grafana' ? 7 : 3, 300))
      expect(native(preset, body)).toEqual(await reference(preset, body));
  });

  it.each([
    ['no alerts', { receiver: 'x' }],
    ['alerts not an array', { alerts: { status: 'firing' } }],
    ['a numeric severity', { alerts: [{ status: 'firing', labels: { severity: 5, instance: 'a' } }] }],
    [
      'nested arrays of alerts',
      { alerts: [[{ status: 'firing', labels: { instance: 'a' } }], { labels: { job: 'j' } }] },
    ],
    ['non-object alerts', { alerts: ['x', 3] }],
  ])('equals the JSONata preset on %s', async (_what, body) => {
    expect(native(preset, body)).toEqual(await reference(preset, body));
  });
});
