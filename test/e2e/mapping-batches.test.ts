/**
 * Custom-mapped payloads handed to the mapping workers in batches (api/mapping/worker-pool.ts),
 * through the built ingester: many payloads of one namespace at once, one worker, so they go over
 * several to a message; every request is answered with the events of its own payload.
 */
import { jest } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from './support/ingester.js';

jest.setTimeout(60_000);

let ing: RunningIngester;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-batches-'));
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(
      tenantRoute('batched', 'team-a', {
        mapping: { expression: '{"source": host, "severity": "minor", "description": msg}' },
      }),
    );
    // One worker, and the namespace's queue share above the requests sent at once.
    config.mapping = { workers: 1, maxQueuedPerNamespace: 64 };
    // Each payload reserves its worst case (the CPU limit) of the namespace's mapping CPU first.
    config.tenantLimits = { namespace: { mappingCpuMillisPerSecond: 100_000, mappingCpuBurstMillis: 100_000 } };
    config.sinks = { log: { path: join(dir, 'events.jsonl') } };
    config.deadLetter = { path: join(dir, 'dead.sqlite') };
  });
});

afterAll(async () => {
  await ing?.stop();
});

it('answers each of 48 payloads sent at once with the events of its own payload', async () => {
  const answers = await Promise.all(
    Array.from({ length: 48 }, async (_, i) => {
      const res = await post(
        `${ing.url}/events/webhook_batched?dryRun=true`,
        { host: `host-${i}`, msg: `message ${i}` },
        tenantAuth('batched'),
      );
      return { i, status: res.status, json: res.json() };
    }),
  );
  for (const { i, status, json } of answers) {
    expect(status).toBe(200);
    const events = json.events as Array<Record<string, unknown>>;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ source: `host-${i}`, description: `message ${i}` });
  }
  // And accepted for real: each answer counts its own one event.
  const accepted = await Promise.all(
    Array.from({ length: 32 }, (_, i) =>
      post(`${ing.url}/events/webhook_batched`, { host: `h-${i}`, msg: 'm' }, tenantAuth('batched')),
    ),
  );
  for (const res of accepted) {
    expect(res.status).toBe(200);
    expect(res.json().response).toMatchObject({ processed: 1, received: 1 });
  }
});
