/**
 * The dead letter without the bus, through the built ingester:
 * - a mapping failure survives kill -9 and restart (the SQLite file), and replays once fixed;
 * - one tenant flooding the dead letter with unmappable 1 MB payloads pushes out only its own
 *   letters, never another tenant's, and the other tenant's requests keep getting 200 quickly
 *   (before: one 64 MiB budget rewritten on the event loop at every entry, 26% of them 503);
 * - two replays at once hand each payload on once (before: every payload twice).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { parse, stringify } from 'yaml';
import { waitFor } from '../../support/waiting.js';
import { metricValue } from '../support/nats-server.js';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { FIXED, integration, listLetters, percentile, replay, sendAs } from './support.js';

jest.setTimeout(120_000);

const dirs: string[] = [];
const running: RunningIngester[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'intake-e2e-dl-'));
  dirs.push(d);
  return d;
};
afterAll(async () => {
  for (const i of running) await i.stop('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const events = (file: string): Array<Record<string, unknown>> =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

async function start(dir: string, extra: (c: Record<string, unknown>) => void = () => {}): Promise<RunningIngester> {
  const ing = await startIngester((c) => {
    (c.routes as unknown[]).push(
      integration('flood', 'team-a'),
      integration('steady', 'team-b'),
      integration('fixme', 'team-b'),
    );
    c.sinks = { log: { path: join(dir, 'events.jsonl') } };
    c.deadLetter = { path: join(dir, 'deadletter.sqlite') };
    extra(c);
  });
  running.push(ing);
  return ing;
}

function useMapping(ing: RunningIngester, name: string, mapping: Record<string, unknown>): void {
  const config = parse(readFileSync(ing.configPath, 'utf8')) as { routes: Array<{ name: string; mapping?: unknown }> };
  (config.routes.find((r) => r.name === name) as { mapping?: unknown }).mapping = mapping;
  writeFileSync(ing.configPath, stringify(config));
}

it('keeps a mapping failure through kill -9 and restart (no bus, no spool: the local SQLite file), then replays it', async () => {
  const dir = tempDir();
  const first = await start(dir);
  expect(first.stdout() + first.stderr()).toContain('this replica only');
  const res = await sendAs(first, 'fixme', { hostname: 'db-7', level: 3 });
  expect(res.status).toBe(422);
  const id = res.headers.get('x-intake-dead-letter-id');
  expect(id).toBeTruthy();
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await start(dir);
  const kept = await listLetters(second, 'kind=mapping');
  expect(kept.entries).toEqual([
    expect.objectContaining({
      id,
      kind: 'mapping',
      namespace: 'team-b',
      integration: 'fixme',
      payload: { hostname: 'db-7', level: 3 },
    }),
  ]);
  useMapping(second, 'fixme', FIXED);
  await waitFor('fixed mapping loaded', () => fetchDry(second), 15_000, 100);
  const report = await replay(second, 'kind=mapping');
  expect(report).toMatchObject({ replayed: 1, failed: 0, skipped: 0 });
  await waitFor(
    'replayed event in the log',
    async () => events(join(dir, 'events.jsonl')).some((e) => e.source === 'db-7'),
    10_000,
    50,
  );
  expect((await listLetters(second)).count).toBe(0);
  await second.stop();
});

async function fetchDry(ing: RunningIngester, name = 'fixme'): Promise<boolean> {
  const r = await sendAs(ing, name, { hostname: 'probe', level: 1 }, '?dryRun=true');
  return r.status === 200 && (r.json() as { success?: boolean }).success === true;
}

describe('with a storage directory (deadletters.sqlite in it)', () => {
  let dir: string;
  let ing: RunningIngester;
  beforeAll(async () => {
    dir = tempDir();
    ing = await start(dir, (c) => {
      c.spool = { path: join(dir, 'spool') };
      c.deadLetter = {
        path: join(dir, 'deadletter.sqlite'),
        maxBytes: 64 * 1024 * 1024,
        maxBytesPerNamespace: 8 * 1024 * 1024,
      };
    });
  });
  afterAll(() => ing.stop());

  it('keeps the letters in the spool directory, not at deadLetter.path', async () => {
    expect(existsSync(join(dir, 'spool', 'deadletters.sqlite'))).toBe(true);
    expect(existsSync(join(dir, 'deadletter.sqlite'))).toBe(false);
    const listed = await listLetters(ing, 'namespace=team-b');
    expect(listed.store).toContain(join(dir, 'spool', 'deadletters.sqlite'));
    expect(listed.entries).toEqual([]);
  });

  it("lets a tenant flooding the dead letter push out only its own letters, while another tenant's requests stay fast", async () => {
    const quiet = await sendAs(ing, 'steady', { hostname: 'b-kept', level: 1 });
    expect(quiet.status).toBe(422);
    const quietId = quiet.headers.get('x-intake-dead-letter-id');
    // Tenant B: steady valid events (a mapping that works) while tenant A floods.
    useMapping(ing, 'steady', FIXED);
    await waitFor('steady mapping fixed', () => fetchDry(ing, 'steady'), 15_000, 100);
    const big = { hostname: 'a', level: 1, blob: 'x'.repeat(1_000_000) };
    let flooding = true;
    const flood = (async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 69; i++) statuses.push((await sendAs(ing, 'flood', { ...big, n: i })).status);
      flooding = false;
      return statuses;
    })();
    const latencies: number[] = [];
    const bStatuses: number[] = [];
    while (flooding) {
      const t0 = performance.now();
      const r = await sendAs(ing, 'steady', { hostname: `b-${latencies.length}`, level: 2 });
      latencies.push(performance.now() - t0);
      bStatuses.push(r.status);
      await new Promise((r2) => setTimeout(r2, 20));
    }
    const aStatuses = await flood;
    latencies.sort((x, y) => x - y);
    const refused = bStatuses.filter((s) => s !== 200).length;
    process.stdout.write(
      `dead-letter flood (SQLite share): tenant B ${bStatuses.length} requests, ${refused} not 200 (${((100 * refused) / bStatuses.length).toFixed(1)}%), p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${(latencies.at(-1) ?? 0).toFixed(1)} ms\n`,
    );
    expect(aStatuses.every((s) => s === 422)).toBe(true);
    expect(refused).toBe(0);
    expect(bStatuses.length).toBeGreaterThan(10);
    // B's letter is still there; A holds at most its share.
    const listed = await listLetters(ing);
    expect(listed.entries.some((e) => e.id === quietId)).toBe(true);
    expect(listed.namespaces['team-a']).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(listed.entries.filter((e) => e.namespace === 'team-a').length).toBeGreaterThanOrEqual(7);
    expect(
      await metricValue(
        ing.adminUrl,
        'intake_deadletter_dropped_total{kind="mapping",namespace="team-a",reason="namespace_share"}',
      ),
    ).toBeGreaterThanOrEqual(60);
    expect(
      await metricValue(
        ing.adminUrl,
        'intake_deadletter_dropped_total{kind="mapping",namespace="team-b",reason="namespace_share"}',
      ),
    ).toBeUndefined();
  });

  it('hands each payload on once when two replays run at the same time', async () => {
    const sent: string[] = [];
    for (let i = 0; i < 20; i++) {
      let r = await sendAs(ing, 'fixme', { hostname: `twice-${i}`, level: 4 });
      // On a loaded machine the overload guard may still answer 503 right after the flood: a sender retries.
      for (let retry = 0; r.status === 503 && retry < 20; retry++) {
        process.stdout.write(`503 before the replay test (retried): ${r.text}\n`);
        await new Promise((w) => setTimeout(w, 250));
        r = await sendAs(ing, 'fixme', { hostname: `twice-${i}`, level: 4 });
      }
      expect({ status: r.status, body: r.text }).toMatchObject({ status: 422 });
      sent.push(`twice-${i}`);
    }
    useMapping(ing, 'fixme', FIXED);
    await waitFor('fixed mapping loaded', () => fetchDry(ing), 15_000, 100);
    const [one, two] = await Promise.all([replay(ing, 'integration=fixme'), replay(ing, 'integration=fixme')]);
    // 20 letters, each replayed by exactly one of the two.
    expect(one.replayed + two.replayed).toBe(20);
    expect(one.failed + two.failed).toBe(0);
    const log = join(dir, 'events.jsonl');
    await waitFor(
      'replayed events in the log',
      async () => sent.every((s) => events(log).some((e) => e.source === s)),
      10_000,
      50,
    );
    const counts = new Map<string, number>();
    for (const e of events(log))
      if (typeof e.source === 'string' && e.source.startsWith('twice-'))
        counts.set(e.source, (counts.get(e.source) ?? 0) + 1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(counts.size).toBe(20);
    expect((await listLetters(ing, 'integration=fixme')).count).toBe(0);
  });
});
