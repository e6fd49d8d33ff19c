/**
 * Amplification: an Alertmanager-shaped body of about 1 MB whose 900 KB
 * groupKey the preset copies into each of its 1,000 events. Before the bound: 200 after about
 * 29 s, ~880 MB added to the stream and the ingester at 2.2 GiB. Now the mapped output is bounded
 * (mapping.maxOutputBytes): one clear 422 naming the setting, memory and the stream stay flat, and
 * another tenant is served meanwhile. A tenant's expression that amplifies is bounded the same way.
 */
import { readFileSync } from 'node:fs';
import { jest } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  tenantAuth,
  tenantRoute,
  basic,
  DEMO,
  post,
  startIngester,
  type RunningIngester,
} from '../support/ingester.js';
import { handoffConfig, startNats, untilDeadLettersOpen, type RunningNats } from '../support/nats-server.js';

jest.setTimeout(120_000);

const route = (name: string, namespace: string, mapping: Record<string, unknown>) =>
  tenantRoute(name, namespace, { mapping });
const auth = tenantAuth;

let nats: RunningNats;
let ing: RunningIngester;

beforeAll(async () => {
  nats = await startNats();
  ing = await startIngester((config) => {
    handoffConfig(nats)(config);
    (config.routes as unknown[]).push(
      route('am', 'team-a', { preset: 'alertmanager' }),
      // The same amplification written as a tenant's own expression.
      route('copier', 'team-a', { expression: 'alerts.{"source": "x", "severity": 1, "key": $$.groupKey}' }),
    );
    config.deadLetter = { path: `${nats.storeDir}/dead.sqlite`, maxBytes: 64 << 20 };
  });
  // The refusal is a 422 only once the payload can be kept for replay (else 503, retry later).
  await untilDeadLettersOpen(ing.adminUrl);
});

afterAll(async () => {
  await ing?.stop('SIGKILL');
  await nats?.stop();
});

/** Resident memory of the ingester process, MiB. */
const rssMiB = (): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${ing.child.pid}/status`, 'utf8'))?.[1]) / 1024;

async function streamBytes(): Promise<number> {
  const nc = await connect({ servers: nats.url });
  try {
    return (await (await jetstreamManager(nc)).streams.info('INTAKE_EVENTS')).state.bytes;
  } finally {
    await nc.close();
  }
}

/** About 1 MB: a 900 KB groupKey and 1,000 tiny alerts. */
const amplifying = (): string =>
  JSON.stringify({
    receiver: 'intake',
    status: 'firing',
    version: '4',
    groupKey: 'k'.repeat(900_000),
    alerts: Array.from({ length: 1000 }, (_, i) => ({
      status: 'firing',
      labels: { alertname: `a${i}` },
      fingerprint: `f${i}`,
    })),
  });

describe('a mapping whose output is far larger than its body', () => {
  it.each(['am', 'copier'])(
    '%s: refused with 422 naming mapping.maxOutputBytes; memory and the stream stay flat, another tenant is served',
    async (name) => {
      // Warm up: a first request of each kind, so the baseline includes what any request costs.
      expect(
        (
          await post(
            `${ing.url}/events/webhook_demo`,
            { source: 'warm', severity: 1 },
            { authorization: basic(DEMO.user, DEMO.password) },
          )
        ).status,
      ).toBe(200);
      const rssBefore = rssMiB();
      const bytesBefore = await streamBytes();
      const body = amplifying();
      expect(body.length).toBeGreaterThan(900_000);
      expect(body.length).toBeLessThan(1 << 20);

      let others = 0;
      let done = false;
      const started = performance.now();
      const hostile = post(`${ing.url}/events/webhook_${name}`, body, auth(name)).finally(() => (done = true));
      const served: number[] = [];
      while (!done || others === 0) {
        const res = await post(
          `${ing.url}/events/webhook_demo`,
          { source: `meanwhile-${others}`, severity: 1 },
          { authorization: basic(DEMO.user, DEMO.password) },
        );
        served.push(res.status);
        others++;
      }
      const res = await hostile;
      const tookMs = performance.now() - started;
      const rssAfter = rssMiB();
      const added = (await streamBytes()) - bytesBefore;
      console.log(
        `${name}: ${res.status} after ${Math.round(tookMs)} ms; RSS ${Math.round(rssBefore)} -> ${Math.round(rssAfter)} MiB; stream +${added} bytes; ${others} other requests`,
      );

      expect(res.status).toBe(422);
      expect(res.json()).toMatchObject({ code: 'MAPPING_FAILED' });
      expect(String(res.json().message)).toMatch(/INTAKE_OUTPUT_LIMIT.*mapping\.maxOutputBytes/);
      expect(served.every((s) => s === 200)).toBe(true);
      // Only the other tenant's small events reached the stream.
      expect(added).toBeLessThan(others * 2048);
      expect(rssAfter - rssBefore).toBeLessThan(120);

      // The dry run is bounded the same way.
      const dry = await post(`${ing.url}/events/webhook_${name}?dryRun=true`, body, auth(name));
      expect(dry.status).toBe(200);
      expect(dry.json()).toMatchObject({ success: false, dryRun: true });
      expect(String(dry.json().message)).toMatch(/mapping\.maxOutputBytes/);
    },
  );
});
