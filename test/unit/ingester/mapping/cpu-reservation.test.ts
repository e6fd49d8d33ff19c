/**
 * A custom expression's evaluation is paid for before it is queued (mapped-webhooks.ts with the
 * TenantLimiter): its namespace reserves the worst case (the evaluation timeout) from its mapping
 * CPU bucket, is refused at once when it cannot, and the reservation is settled to what the
 * evaluation used, however it ends. Presets are charged after they ran, as before.
 */
import { Registry } from 'prom-client';
import {
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingLimits,
  type MappingResult,
} from '../../../../api/mapping/engine.js';
import type { Route } from '../../../../api/route.js';
import { LimitError } from '../../../../ingester/core/errors.js';
import { SqliteDeadLetters } from '../../../../ingester/dead-letters/sqlite-store.js';
import { TenantLimiter } from '../../../../ingester/limits/tenant-limiter.js';
import { MappedWebhooks, MappingFailure } from '../../../../ingester/mapping/mapped-webhooks.js';
import { MappingMetrics } from '../../../../ingester/mapping/metrics.js';
import { RouteTable, type RouteEntry } from '../../../../ingester/routing/route-table.js';

const RESERVE_MS = 500;

const route = (name: string, mapping: Route['mapping'] & object): Route => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'team-a',
  credentials: [{ username: name, secret: { plain: `${name}-password` } }],
  mapping,
  // 1,000 ms of CPU at once, 100 ms a second: two evaluations at their worst.
  limits: { namespace: { mappingCpuMillisPerSecond: 100, mappingCpuBurstMillis: 1000 } },
});

/** A runner whose evaluations end when the test says, and that records whose they were. */
class HeldRunner implements ExpressionRunner {
  readonly pending: Array<{ tenant?: string; end: (outcome: MappingResult | Error) => void }> = [];
  run(_s: string, _l: MappingLimits, _j: Uint8Array, options?: { tenant?: string }): Promise<MappingResult> {
    return new Promise((resolve, reject) =>
      this.pending.push({
        ...(options?.tenant !== undefined ? { tenant: options.tenant } : {}),
        end: (o) => (o instanceof Error ? reject(o) : resolve(o)),
      }),
    );
  }
}

function setUp() {
  let nowMs = 0;
  const runner = new HeldRunner();
  const { table } = RouteTable.build(
    [
      { source: 'a', route: route('custom', { expression: '{"source": host, "severity": 1}' }) },
      { source: 'b', route: route('preset', { preset: 'nagios' }) },
    ],
    { allowPlaintext: true, mappingRunner: runner },
  );
  const entry = (name: string) => [...table.entries()].find((e) => e.name === name) as RouteEntry;
  const limiter = new TenantLimiter({ mode: 'file', mappingReserveMs: RESERVE_MS, now: () => nowMs });
  limiter.sync(table.entries());
  const mapped = new MappedWebhooks({
    deadLetter: new SqliteDeadLetters(':memory:', { maxBytes: 1 << 20, maxBytesPerNamespace: 1 << 20 }),
    metrics: new MappingMetrics(new Registry()),
    eventsPerRequest: 1000,
    chargeMappingCpu: (e, ms) => limiter.chargeMappingCpu(e, ms),
    reserveMappingCpu: (e) => limiter.reserveMappingCpu(e),
  });
  const map = (name: string) =>
    mapped.map({ host: 'h' }, entry(name), { integration: name, namespace: 'team-a', receivedAtMs: 0 });
  return { runner, limiter, entry, map, advance: (ms: number) => (nowMs += ms) };
}

const ok = (cpuMs: number): MappingResult => ({ items: [{ source: 'h', severity: 1 }], cpuMs, outputBytes: 30 });
const refusedWith = async (p: Promise<unknown>): Promise<LimitError> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LimitError);
  return err as LimitError;
};

describe('a custom expression reserves its worst-case CPU before it is queued', () => {
  it('runs as many evaluations at once as the burst covers, refuses the next at once (MAPPING_CPU_LIMITED, Retry-After), and as the namespace name says', async () => {
    const t = setUp();
    const first = t.map('custom');
    const second = t.map('custom');
    expect(t.runner.pending.map((p) => p.tenant)).toEqual(['team-a', 'team-a']);
    const refused = await refusedWith(t.map('custom'));
    expect(refused.code).toBe('MAPPING_CPU_LIMITED');
    expect(refused.statusCode).toBe(429);
    expect(refused.limit).toMatchObject({ scope: 'namespace', name: 'team-a', resource: 'mappingCpuMillis' });
    // 500 ms at 100 ms a second: 5 s.
    expect(refused.headers?.['retry-after']).toBe('5');
    // It never reached the runner.
    expect(t.runner.pending).toHaveLength(2);
    // Refused before its body is read, too.
    expect(t.limiter.refusalFor(t.entry('custom'))?.code).toBe('MAPPING_CPU_LIMITED');
    for (const p of t.runner.pending.splice(0)) p.end(ok(5));
    await Promise.all([first, second]);
  });

  it('settles to the CPU time used: what an evaluation did not use is given back at once', async () => {
    const t = setUp();
    const first = t.map('custom');
    const second = t.map('custom');
    t.runner.pending.shift()?.end(ok(20));
    await first;
    // 480 of the first's 500 given back: 20 ms short of a third reservation, 200 ms at 100 ms/s.
    expect(t.limiter.refusalFor(t.entry('custom'))?.code).toBe('MAPPING_CPU_LIMITED');
    t.advance(200);
    expect(t.limiter.refusalFor(t.entry('custom'))).toBeUndefined();
    const third = t.map('custom');
    expect(t.runner.pending).toHaveLength(2);
    for (const p of t.runner.pending.splice(0)) p.end(ok(20));
    await Promise.all([second, third]);
  });

  it('gives everything back when the workers refused the payload (MAPPING_BUSY), and charges a failed evaluation what it used', async () => {
    const t = setUp();
    const busy = t.map('custom');
    t.runner.pending.shift()?.end(new MappingBusy('full', 1));
    await expect(busy).rejects.toMatchObject({ code: 'MAPPING_BUSY', statusCode: 503 });
    // A runaway evaluation, stopped a little past its limit: 600 ms charged, a debt of 100 after the burst.
    const runaway = Array.from({ length: 2 }, () => t.map('custom'));
    for (const p of t.runner.pending.splice(0))
      p.end(Object.assign(new MappingError('D1012', 'Evaluation timeout'), { cpuMs: 600 }));
    for (const r of runaway) await expect(r).rejects.toBeInstanceOf(MappingFailure);
    expect(t.limiter.refusalFor(t.entry('custom'))?.code).toBe('MAPPING_CPU_LIMITED');
    // -200 ms: 700 ms to reserve 500 again at 100 ms/s.
    t.advance(6_999);
    expect(t.limiter.refusalFor(t.entry('custom'))?.code).toBe('MAPPING_CPU_LIMITED');
    t.advance(2);
    expect(t.limiter.refusalFor(t.entry('custom'))).toBeUndefined();
  });

  it('settles to the CPU used when what the mapping made is refused afterwards (invalid events, too many events): nothing stays reserved', async () => {
    const t = setUp();
    const invalid = t.map('custom');
    const tooMany = t.map('custom');
    // Both reservations held: the burst (two worst cases) is taken.
    expect(t.limiter.refusalFor(t.entry('custom'))?.code).toBe('MAPPING_CPU_LIMITED');
    const [a, b] = t.runner.pending.splice(0);
    a?.end({ items: [{ severity: 'not a number' }], cpuMs: 10, outputBytes: 30 });
    b?.end({ items: Array.from({ length: 1001 }, () => ({ source: 'h', severity: 1 })), cpuMs: 10, outputBytes: 30 });
    await expect(invalid).rejects.toMatchObject({ reason: 'invalid_events' });
    await expect(tooMany).rejects.toBeInstanceOf(MappingFailure);
    // 20 ms used of 1,000: one worst case fits again at once, a second 20 ms (200 ms at 100 ms/s) later.
    const next = [t.map('custom')];
    await refusedWith(t.map('custom'));
    t.advance(200);
    next.push(t.map('custom'));
    expect(t.runner.pending).toHaveLength(2);
    for (const p of t.runner.pending.splice(0)) p.end(ok(5));
    await Promise.all(next);
  });

  it('a preset reserves nothing: it is charged after it ran, as before', async () => {
    const t = setUp();
    const held = [t.map('custom'), t.map('custom')];
    // The burst is reserved whole, but a preset is only refused for a debt.
    const outcome = await t.map('preset').then(
      () => 'mapped',
      (e: unknown) => (e instanceof LimitError ? 'refused' : 'failed on its own'),
    );
    expect(outcome).not.toBe('refused');
    for (const p of t.runner.pending.splice(0)) p.end(ok(1));
    await Promise.all(held);
  });
});
