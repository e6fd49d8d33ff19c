/**
 * Tenants' mappings through the built ingester: a tenant's expression cannot change
 * another tenant's mapping, a hostile expression is stopped at its CPU limit without holding the
 * process, a real-sized Alertmanager group of 1,001 alerts is accepted whole, and an absurdly
 * nested body is one clear 4xx.
 */
import { jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { postAlerts, startAlertmanager } from './support/alertmanager.js';
import { mappingWorkerPids } from './support/mapping-workers.js';
import { eventLines, post, type RunningIngester, startIngester, tenantAuth, tenantRoute } from './support/ingester.js';
import { waitFor } from '../support/waiting.js';
import { ROOT } from '../support/paths.js';
import { readProcStat } from '../../api/mapping/worker-priority.js';

// A busy machine: worker start-up, hostile expressions running into their limits.
jest.setTimeout(120_000);

const route = (name: string, namespace: string, mapping: Record<string, unknown>) =>
  tenantRoute(name, namespace, { mapping });
const auth = tenantAuth;

const TIMEOUT_MS = 500;
let ing: RunningIngester;
let eventsFile: string;

const logEvents = (integration: string): Array<Record<string, unknown>> =>
  existsSync(eventsFile)
    ? eventLines(readFileSync(eventsFile, 'utf8')).filter((e) => e.integration === integration)
    : [];

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-isolation-'));
  eventsFile = join(dir, 'events.jsonl');
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(
      // team-a: hostile expressions.
      route('rewrite-upper', 'team-a', { expression: '$ ~> |$uppercase|function($x){"OK"}|' }),
      route('rewrite-lower', 'team-a', { expression: '$ ~> |$lowercase|function($x){"clear"}|' }),
      route('distinct', 'team-a', { expression: '[1..3].$count($distinct([1..100000]))' }),
      route('pad', 'team-a', { expression: '[1..100000].$pad("", 4000000, "x")' }),
      // A runaway loop inside $eval: the worker's own time check stops it, inside $eval's wrapping.
      route('evaluator', 'team-c', {
        expression: '$eval("($f := function($n){$n > 0 ? $f($n - 1) : 0}; [1..100000].$f(200))")',
      }),
      // team-b: a preset, and its own expression using the same built-ins.
      route('nagios', 'team-b', { preset: 'nagios' }),
      route('checker', 'team-b', {
        expression: '{"source": host, "severity": $lowercase(level), "description": $uppercase(host)}',
      }),
      route('am', 'team-b', { preset: 'alertmanager' }),
    );
    config.mapping = { timeout: `${TIMEOUT_MS}ms`, workers: 2 };
    config.sinks = { log: { path: eventsFile } };
    config.deadLetter = { path: join(dir, 'dead.sqlite'), maxBytes: 64 << 20 };
  });
});

afterAll(async () => {
  await ing?.stop();
});

/** What team-b's mappings produce, by dry run (nothing accepted). */
async function teamB(): Promise<{ nagios: Record<string, unknown>; checker: Record<string, unknown> }> {
  const nagios = await post(
    `${ing.url}/events/webhook_nagios?dryRun=true`,
    { notification_type: 'PROBLEM', host: 'web-9', service: 'HTTP', state: 'CRITICAL', output: 'timeout' },
    auth('nagios'),
  );
  const checker = await post(
    `${ing.url}/events/webhook_checker?dryRun=true`,
    { host: 'web-1', level: 'MAJOR' },
    auth('checker'),
  );
  expect(nagios.status).toBe(200);
  expect(checker.status).toBe(200);
  const first = (r: typeof nagios) =>
    ((r.json().events as Array<Record<string, unknown>> | undefined) ?? [])[0] ?? r.json();
  return { nagios: first(nagios), checker: first(checker) };
}

describe('a tenant rewriting built-in functions (defect 1)', () => {
  it("changes neither another tenant's preset nor that tenant's own expression", async () => {
    const before = await teamB();
    expect(before.nagios).toMatchObject({ severity: 5, severity_name: 'critical' });
    expect(before.checker).toMatchObject({ severity: 4, severity_name: 'major', description: 'WEB-1' });

    // Several times, so every mapping worker has seen the hostile expressions.
    for (let i = 0; i < 4; i++) {
      const [upper, lower] = await Promise.all([
        post(`${ing.url}/events/webhook_rewrite-upper`, { any: i }, auth('rewrite-upper')),
        post(`${ing.url}/events/webhook_rewrite-lower`, { any: i }, auth('rewrite-lower')),
      ]);
      // The built-ins are read-only: the transform fails (a mapping failure of team-a's own).
      expect(upper.status).toBe(422);
      expect(lower.status).toBe(422);
    }

    const after = await teamB();
    expect(after.nagios).toMatchObject({ severity: 5, severity_name: 'critical' });
    expect(after.checker).toMatchObject({ severity: 4, severity_name: 'major', description: 'WEB-1' });
  });
});

describe('a hostile expression (defect 2)', () => {
  /** The CPU time each hostile evaluation used, as its refusal said (the charge below must match it). */
  const cpuUsedMs = new Map<string, number>();
  /** Runs the hostile request while timing /healthz and team-b's requests; returns what was seen. */
  async function whileHostile(name: string): Promise<{
    status: number;
    code: string;
    message: string;
    tookMs: number;
    health: number[];
    others: Array<{ integration: string; status: number; ms: number }>;
  }> {
    const started = performance.now();
    let done = false;
    const hostile = post(`${ing.url}/events/webhook_${name}`, { any: 1 }, auth(name)).finally(() => (done = true));
    const health: number[] = [];
    const others: Array<{ integration: string; status: number; ms: number }> = [];
    let i = 0;
    while (!done && performance.now() - started < 30_000) {
      const t0 = performance.now();
      const h = await fetch(`${ing.adminUrl}/healthz`);
      expect(h.status).toBe(200);
      health.push(performance.now() - t0);
      for (const [integration, body] of [
        ['nagios', { host: `h-${i}`, state: 'CRITICAL' }],
        ['checker', { host: `h-${i}`, level: 'minor' }],
      ] as const) {
        const t1 = performance.now();
        const res = await post(`${ing.url}/events/webhook_${integration}`, body, auth(integration));
        others.push({ integration, status: res.status, ms: performance.now() - t1 });
      }
      i++;
    }
    const res = await hostile;
    const json = res.json();
    return {
      status: res.status,
      code: String(json.code),
      message: String(json.message),
      tookMs: performance.now() - started,
      health,
      others,
    };
  }

  const p99 = (values: number[]): number =>
    [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil(values.length * 0.99) - 1)] ?? 0;

  it.each(['distinct', 'pad'])(
    '%s: stopped at about its limit (422) while the admin port and other tenants keep answering',
    async (name) => {
      const seen = await whileHostile(name);
      console.log(
        `${name}: ${seen.status} after ${Math.round(seen.tookMs)} ms; healthz max ${Math.round(Math.max(...seen.health))} ms; other tenants p99 ${['nagios', 'checker'].map((i) => `${i} ${Math.round(p99(seen.others.filter((o) => o.integration === i).map((o) => o.ms)))} ms`).join(', ')} over ${seen.others.length} requests; ${seen.message}`,
      );
      expect(seen.status).toBe(422);
      expect(seen.code).toBe('MAPPING_FAILED');
      expect(seen.message).toMatch(/D1012/);
      // The limit counts CPU time: stopped just past it. On a shared machine the wall clock runs
      // longer. Before the fix: 200 after about 5 s (distinct), or the process held ~13 s (pad).
      // (A machine too busy to give the worker a core stops it by the wall-clock backstop instead.)
      const cpuMs = Number(
        /(\d+) ms of CPU time/.exec(seen.message)?.[1] ?? /after (\d+) milliseconds/.exec(seen.message)?.[1],
      );
      cpuUsedMs.set(name, cpuMs);
      expect(seen.message).toContain('(mapping.timeout)');
      if (!/wall-clock backstop/.test(seen.message)) expect(cpuMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
      expect(cpuMs).toBeLessThan(TIMEOUT_MS * 2);
      expect(seen.tookMs).toBeLessThan(10_000);
      expect(seen.others.length).toBeGreaterThan(0);
      expect(seen.others.every((o) => o.status === 200)).toBe(true);
      expect(Math.max(...seen.health)).toBeLessThan(400);
    },
  );

  it('is charged for the CPU time it used (intake_mapping_cpu_seconds_total)', async () => {
    const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    const used = (integration: string) =>
      Number(
        /\s(\S+)$/.exec(
          text
            .split('\n')
            .find(
              (l) => l.startsWith('intake_mapping_cpu_seconds_total{') && l.includes(`integration="${integration}"`),
            ) ?? ' NaN',
        )?.[1],
      );
    // What it used: about the limit, or less when the machine was too busy to give the worker a
    // core and the wall-clock backstop stopped it (its refusal says how much it used).
    const reported = cpuUsedMs.get('distinct') ?? TIMEOUT_MS;
    expect(used('distinct')).toBeGreaterThanOrEqual((Math.min(reported, TIMEOUT_MS) / 1000) * 0.8);
    expect(used('checker')).toBeGreaterThan(0);
  });
});

describe('a runaway $eval', () => {
  it('is reported as the time limit (D1012), not as an error of the expression $eval ran (D3121)', async () => {
    const res = await post(`${ing.url}/events/webhook_evaluator`, { any: 1 }, auth('evaluator'));
    expect(res.status).toBe(422);
    const message = String(res.json().message);
    expect(message).toMatch(/D1012/);
    expect(message).not.toMatch(/D3121/);
  });
});

/** Exactly what Alertmanager 0.2x posts for a group (webhook version 4). */
function alertmanagerGroup(alerts: number): Record<string, unknown> {
  const commonLabels = { alertname: 'DiskFull', job: 'node', severity: 'warning' };
  return {
    receiver: 'intake',
    status: 'firing',
    alerts: Array.from({ length: alerts }, (_, i) => ({
      status: 'firing',
      labels: { ...commonLabels, instance: `node-${i}:9100`, mountpoint: '/var' },
      annotations: { summary: `disk /var on node-${i} is 95% full` },
      startsAt: '2026-11-24T00:40:00.000Z',
      endsAt: '0001-01-01T00:00:00Z',
      generatorURL: `http://prometheus:9090/graph?g0.expr=node_filesystem_avail_bytes&g0.tab=1&i=${i}`,
      fingerprint: (0x1000_0000_0000 + i).toString(16),
    })),
    groupLabels: { alertname: 'DiskFull' },
    commonLabels,
    commonAnnotations: {},
    externalURL: 'http://alertmanager:9093',
    version: '4',
    groupKey: '{}:{alertname="DiskFull"}',
    truncatedAlerts: 0,
  };
}

/** A thread's (or process's) nice value and scheduling policy; undefined once it has ended. */
const scheduling = (statPath: string): { nice: number; policy: number } | undefined => {
  const stat = readProcStat(statPath);
  return stat && { nice: stat(19), policy: stat(41) };
};
const SCHED_OTHER = 0;
const SCHED_IDLE = 5;
const SCHED_BATCH = 3;

/** Every thread of process `pid`: its id, nice value and policy (threads that end meanwhile are skipped). */
function threadsOf(pid: number): Array<{ tid: number; nice: number; policy: number }> {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    const s = scheduling(`/proc/${pid}/task/${tid}/stat`);
    return s ? [{ tid: Number(tid), ...s }] : [];
  });
}

describe('the mapping worker processes', () => {
  (process.platform === 'linux' ? it : it.skip)(
    "run tenants' expressions with every one of their threads under SCHED_IDLE (an idle worker) or SCHED_BATCH at nice 19 (a prompt worker), so the ingester's threads preempt them; the ingester's own threads keep its scheduling",
    async () => {
      expect(
        (await post(`${ing.url}/events/webhook_checker`, { host: 'db-1', level: 'WARNING' }, auth('checker'))).status,
      ).toBe(200);
      const pid = ing.child.pid as number;
      const own = scheduling('/proc/self/stat') as { nice: number; policy: number };
      // Workers come and go (one stopped at its limit by an earlier test is replaced), so the check
      // is retried until the pool has settled.
      let seen: unknown;
      const settled = (): boolean => {
        const ingester = threadsOf(pid);
        const workers = mappingWorkerPids(pid).map((w) => ({ pid: w, threads: threadsOf(w) }));
        seen = { ingester, workers };
        return (
          ingester.every((t) => t.policy === SCHED_OTHER && t.nice === own.nice) &&
          workers.length === 2 &&
          workers.every((w) => w.threads.length > 1) &&
          workers.filter((w) => w.threads.every((t) => t.policy === SCHED_IDLE)).length === 1 &&
          workers.filter((w) => w.threads.every((t) => t.policy === SCHED_BATCH && t.nice === 19)).length === 1
        );
      };
      const ok = await waitFor('one worker under SCHED_IDLE, one under SCHED_BATCH at nice 19', async () =>
        settled(),
      ).then(
        () => true,
        () => false,
      );
      if (!ok) throw new Error(`threads (nice, policy) not as wanted: ${JSON.stringify(seen)}`);
      await waitFor('the log line', async () => ing.stderr().includes('mapping workers run under SCHED_IDLE'));
    },
  );
});

/** What a process started by idleCommand (the built module) runs under, with `path` as PATH. */
function startedUnder(path: string): { argv: string[]; priority: Record<string, unknown> } {
  const module = pathToFileURL(join(ROOT, 'dist/api/mapping/worker-priority.js')).href;
  const probe = `import(${JSON.stringify(module)}).then((m) => console.log(JSON.stringify(m.settleWorkerPriority('chrt not found on PATH'))))`;
  const script = `import(${JSON.stringify(module)}).then((m) => console.log(JSON.stringify(m.idleCommand([process.execPath, '-e', ${JSON.stringify(probe)}], ${JSON.stringify(path)}).argv)))`;
  const argv = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
  const out = execFileSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
  return { argv, priority: JSON.parse(out) as Record<string, unknown> };
}

describe('starting a mapping worker', () => {
  (process.platform === 'linux' ? it : it.skip)(
    'goes through chrt when it is on PATH: SCHED_IDLE from the start',
    () => {
      const { argv, priority } = startedUnder(process.env.PATH ?? '');
      expect(argv.slice(1, 3)).toEqual(['--idle', '0']);
      expect(priority).toEqual({ policy: 'idle' });
    },
  );
  (process.platform === 'linux' ? it : it.skip)(
    'without chrt, the worker lowers itself to nice 19 and says why',
    () => {
      const { argv, priority } = startedUnder('/nonexistent');
      expect(argv[0]).toBe(process.execPath);
      expect(priority).toEqual({ policy: 'nice', nice: 19, why: 'chrt not found on PATH' });
    },
  );
});

describe('an Alertmanager group of 1,001 alerts (defect 11)', () => {
  it('is accepted whole: 200 and one event per alert (Alertmanager never retries a 4xx)', async () => {
    const body = alertmanagerGroup(1001);
    const res = await post(`${ing.url}/events/webhook_am`, body, auth('am'));
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ success: true, response: { processed: 1001, received: 1001 } });
    const events = await waitForEvents('am', 1001);
    expect(new Set(events.map((e) => e.signature)).size).toBe(1001);
  });
});

describe('a real Alertmanager with a group of 1,001 alerts (defect 11)', () => {
  it('every notification is accepted, the whole group as one event per alert', async () => {
    const am = await startAlertmanager({
      url: `${ing.url}/events/webhook_am`,
      username: 'am',
      password: 'am-password',
    });
    try {
      const startsAt = new Date(Date.now() - 60_000).toISOString();
      await postAlerts(
        am.url,
        Array.from({ length: 1001 }, (_, i) => ({
          labels: { alertname: 'RealGroup', instance: `node-${i}`, severity: 'warning' },
          annotations: { summary: `node-${i}` },
          startsAt,
        })),
      );
      // Alertmanager may first flush part of the group, then the whole of it (each notification
      // carries every firing alert of the group): wait for one notification with all 1,001.
      const deadline = Date.now() + 60_000;
      let whole: Array<Record<string, unknown>> = [];
      while (Date.now() < deadline && whole.length < 1001) {
        const byNotification = new Map<unknown, Array<Record<string, unknown>>>();
        for (const e of logEvents('am').filter((e) => e.class === 'RealGroup'))
          byNotification.set(e.received_at, [...(byNotification.get(e.received_at) ?? []), e]);
        whole = [...byNotification.values()].sort((a, b) => b.length - a.length)[0] ?? [];
        if (whole.length < 1001) await new Promise((r) => setTimeout(r, 200));
      }
      expect(whole).toHaveLength(1001);
      expect(new Set(whole.map((e) => e.source)).size).toBe(1001);
      // Every notification was accepted (Alertmanager logs a refused one, and drops it on a 4xx).
      expect(am.output()).not.toMatch(/Notify for alerts failed|unrecoverable/i);
    } finally {
      await am.stop();
    }
  });
});

async function waitForEvents(integration: string, n: number): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = logEvents(integration);
    if (found.length >= n || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a 300,000-deep nested body (defect 15)', () => {
  it('is one clear 400 naming the nesting limit, never a 503 the sender retries forever', async () => {
    const depth = 300_000;
    // The preset reads `output`: before the bound, evaluating it overflowed the stack (labelled
    // INTAKE_STRING_LIMIT), and keeping the payload in the dead letter overflowed again: 503.
    const body = `{"host":"web-1","state":"CRITICAL","output":${'['.repeat(depth)}"x"${']'.repeat(depth)}}`;
    const res = await post(`${ing.url}/events/webhook_nagios`, body, auth('nagios'));
    expect(res.status).toBe(400);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(res.json()).toMatchObject({ code: 'JSON_TOO_DEEP' });
    expect(String(res.json().message)).toMatch(/limits\.maxJsonDepth/);
  });
});

describe('a small pool: one worker, one payload queued, a 32 MiB heap', () => {
  let small: RunningIngester;

  beforeAll(async () => {
    small = await startIngester((config) => {
      (config.routes as unknown[]).push(
        route('quick', 'team-a', { expression: '{"source": "q", "severity": 1}' }),
        route('distinct', 'team-a', { expression: '[1..3].$count($distinct([1..100000]))' }),
        route('nagios', 'team-b', { preset: 'nagios' }),
        // 1,000 copies of a 100,000-item array: about 800 MB, quickly.
        route('hoarder', 'team-a', { expression: '($a := [1..99999]; [1..1000].{"x": $append($a, $)})' }),
      );
      config.mapping = { timeout: '1s', workers: 1, maxQueued: 1, workerHeapMb: 32 };
      // A CPU budget for many evaluations at their limit: the queue's bound is what is tested here.
      const limits = config.tenantLimits as { namespace: Record<string, number> };
      limits.namespace.mappingCpuBurstMillis = 20_000;
      config.deadLetter = {
        path: join(mkdtempSync(join(tmpdir(), 'intake-e2e-busy-')), 'dead.sqlite'),
        maxBytes: 1 << 20,
      };
    });
  });

  afterAll(async () => {
    await small?.stop();
  });

  it('answers 503 MAPPING_BUSY with Retry-After when the worker is busy and the queue full: nothing kept, still ready, presets still served', async () => {
    const send = () => post(`${small.url}/events/webhook_distinct`, { any: 1 }, auth('distinct'));
    // The worker starts with the first payload: start it, then occupy it and fill the queue.
    expect((await post(`${small.url}/events/webhook_quick`, { any: 1 }, auth('quick'))).status).toBe(200);
    const running = send();
    await new Promise((r) => setTimeout(r, 200));
    const queued = send();
    await new Promise((r) => setTimeout(r, 100));
    const refused = await send();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.json()).toMatchObject({
      code: 'MAPPING_BUSY',
      message: expect.stringContaining('mapping.maxQueued'),
    });
    expect((await fetch(`${small.adminUrl}/readyz`)).status).toBe(200);
    const preset = await post(
      `${small.url}/events/webhook_nagios`,
      { host: 'web-1', state: 'CRITICAL' },
      auth('nagios'),
    );
    expect(preset.status).toBe(200);
    expect((await running).status).toBe(422);
    expect((await queued).status).toBe(422);
    const kept = (await (await fetch(`${small.adminUrl}/deadletter`)).json()) as { count: number };
    expect(kept.count).toBe(2);
  });

  it('stops an expression that fills its heap at mapping.workerHeapMb (422 INTAKE_MEMORY_LIMIT); a new worker maps the next payload', async () => {
    const res = await post(`${small.url}/events/webhook_hoarder`, { any: 1 }, auth('hoarder'));
    expect(res.status).toBe(422);
    expect(String(res.json().message)).toMatch(/INTAKE_MEMORY_LIMIT.*mapping\.workerHeapMb/);
    expect((await post(`${small.url}/events/webhook_quick`, { any: 1 }, auth('quick'))).status).toBe(200);
  });
});
