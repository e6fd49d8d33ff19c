/**
 * The simplest custom expressions (an object of fields and constants) are evaluated in the mapping
 * worker without JSONata's interpreter (api/mapping/direct.ts). Through the built ingester: the
 * events they make are the ones JSONata makes, checked against the same mapping written so that
 * JSONata must evaluate it (`$.host` for `host`), payload by payload, including payloads the direct
 * evaluation hands back to JSONata (an array on a path) and one whose events fail validation.
 */
import { jest } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basic, eventLines, post, type RunningIngester, startIngester } from './support/ingester.js';

jest.setTimeout(60_000);

const route = (name: string, expression: string) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'default',
  credentials: [{ username: name, secret: { plain: `${name}-password` } }],
  mapping: { expression },
});

const DIRECT =
  '{"source": host, "severity": level, "class": "cpu", "type": "high", "description": msg, "customInfo": info}';
// The same mapping, but a path that starts at a variable (`$`, the payload) is not of the shape:
// JSONata evaluates every payload of it.
const INTERPRETED =
  '{"source": $.host, "severity": level, "class": "cpu", "type": "high", "description": msg, "customInfo": info}';

let ing: RunningIngester;
let eventsFile: string;

const logEvents = (): Array<Record<string, unknown>> =>
  existsSync(eventsFile) ? eventLines(readFileSync(eventsFile, 'utf8')) : [];

beforeAll(async () => {
  eventsFile = join(mkdtempSync(join(tmpdir(), 'intake-e2e-mapping-direct-')), 'events.jsonl');
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(route('direct', DIRECT), route('interpreted', INTERPRETED));
    config.sinks = { log: { path: eventsFile } };
    // Each evaluation reserves mapping.timeout of the namespace's CPU first: room for 16 at once.
    (config.tenantLimits as { namespace: Record<string, number> }).namespace.mappingCpuBurstMillis = 20_000;
  });
});

afterAll(async () => {
  await ing?.stop();
});

/** Posts a body to an integration: its status, and the event it added to the log (if any). */
async function send(name: string, body: unknown): Promise<{ status: number; event?: Record<string, unknown> }> {
  const before = logEvents().length;
  const res = await post(`${ing.url}/events/webhook_${name}`, body, {
    authorization: basic(name, `${name}-password`),
  });
  const after = logEvents();
  return { status: res.status, ...(after.length > before ? { event: after[after.length - 1] } : {}) };
}

/** What an event says of its payload, without what differs between the two integrations. */
const content = (e: Record<string, unknown> | undefined): Record<string, unknown> | undefined => {
  if (!e) return undefined;
  const { source, severity, class: cls, type, description, customInfo } = e;
  return { source, severity, class: cls, type, description, customInfo };
};

/** The mapping CPU time charged to each integration so far (intake_mapping_cpu_seconds_total), seconds. */
async function mappingCpu(): Promise<Record<string, number>> {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^intake_mapping_cpu_seconds_total\{([^}]*)\} (\S+)$/gm)) {
    const name = /integration="([^"]+)"/.exec(m[1] as string)?.[1];
    if (name) out[name] = Number(m[2]);
  }
  return out;
}

describe('custom expressions of the simplest shape', () => {
  it("are charged a fraction of the mapping CPU JSONata's interpreter costs for the same events", async () => {
    const body = { host: 'web-9', level: 'critical', msg: 'CPU above 95% for 5 minutes' };
    const before = await mappingCpu();
    // 16 at a time, as a busy sender's connections: the worker takes them in batches. The two
    // integrations take turns, so that both meet the same conditions.
    const round = async (name: string): Promise<void> => {
      const answers = await Promise.all(
        Array.from({ length: 16 }, () =>
          post(`${ing.url}/events/webhook_${name}`, body, { authorization: basic(name, `${name}-password`) }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 16 }, () => 200));
    };
    for (let i = 0; i < 100; i++) {
      await round('direct');
      await round('interpreted');
    }
    const after = await mappingCpu();
    const used = (name: string): number => (after[name] ?? 0) - (before[name] ?? 0);
    // 1,600 events each. JSONata's interpreter spends some 15-30 µs on each; the direct evaluation
    // a few (the payload's JSON.parse and the output's JSON.stringify remain).
    console.log(
      `mapping CPU for 1,600 events: direct ${(used('direct') * 1000).toFixed(1)} ms, JSONata ${(used('interpreted') * 1000).toFixed(1)} ms`,
    );
    expect(used('interpreted')).toBeGreaterThan(0);
    expect(used('direct')).toBeLessThan(used('interpreted') / 2);
  });

  it.each([
    ['fields and constants', { host: 'web-1', level: 'critical', msg: 'CPU above 95%' }],
    [
      'an object copied whole, text outside ASCII',
      { host: 'wéb-1 "a"', level: 'warning', msg: '💥', info: { a: [1, { b: null }] } },
    ],
    [
      'an array on a path (a singleton JSONata unwraps)',
      { host: 'web-2', level: 'minor', msg: 'm', info: { a: ['x'] } },
    ],
    ['a field that is an array', { host: ['web-5'], level: 'minor', msg: 'm' }],
    ['a key JavaScript gives every object', { host: 'web-3', level: 'major', msg: 'm', info: { constructor: 1 } }],
  ])('map %s to the event JSONata makes', async (_, body) => {
    const direct = await send('direct', body);
    const interpreted = await send('interpreted', body);
    expect(direct.status).toBe(interpreted.status);
    expect(content(direct.event)).toEqual(content(interpreted.event));
    if (typeof body.host === 'string') expect(direct.event?.source).toBe(body.host);
  });

  it('answers a payload whose event fails validation with the same 422 (nothing accepted)', async () => {
    const body = { host: 'web-4', msg: 'no level' };
    const direct = await post(`${ing.url}/events/webhook_direct`, body, {
      authorization: basic('direct', 'direct-password'),
    });
    const interpreted = await post(`${ing.url}/events/webhook_interpreted`, body, {
      authorization: basic('interpreted', 'interpreted-password'),
    });
    expect(direct.status).toBe(422);
    expect(interpreted.status).toBe(422);
    expect((direct.json().errors as unknown[]).length).toBe((interpreted.json().errors as unknown[]).length);
  });
});
