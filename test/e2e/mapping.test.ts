/**
 * Data mapping through the built ingester: a real Alertmanager posting to a preset integration,
 * a hostile expression that must not stall other requests, and dead-letter replay with the CLI.
 */
import { spawn } from 'node:child_process';
import { jest } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ROOT } from '../support/paths.js';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/waiting.js';
import { postAlerts, startAlertmanager, type RunningAlertmanager } from './support/alertmanager.js';
import { basic, DEMO, eventLines, post, type RunningIngester, startIngester } from './support/ingester.js';

// A real Alertmanager's start, group_wait and flushes, on a busy machine.
jest.setTimeout(90_000);

const route = (name: string, mapping: Record<string, unknown>) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'default',
  credentials: [{ username: name, secret: { plain: `${name}-password` } }],
  mapping,
});

const BROKEN = { expression: '{"source": host, "severity": level}' };
const FIXED = { expression: '{"source": hostname, "severity": level}' };

let ing: RunningIngester;
let am: RunningAlertmanager | undefined;
let eventsFile: string;
let deadLetterFile: string;

const logEvents = (): Array<Record<string, unknown>> =>
  existsSync(eventsFile) ? eventLines(readFileSync(eventsFile, 'utf8')) : [];

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-mapping-'));
  eventsFile = join(dir, 'events.jsonl');
  deadLetterFile = join(dir, 'dead.sqlite');
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(
      route('am', { preset: 'alertmanager' }),
      route('hostile', { expression: '($f := function($n){$f($n+1)}; $f(0))' }),
      route('custom', BROKEN),
      route('nagios', { preset: 'nagios' }),
    );
    config.mapping = { timeout: '3s' };
    // Each custom evaluation reserves mapping.timeout of its namespace's CPU budget before it runs: a
    // burst for a few of them, so the runaway one below does not hold the next tests back.
    (config.tenantLimits as { namespace: Record<string, number> }).namespace.mappingCpuBurstMillis = 10_000;
    config.sinks = { log: { path: eventsFile } };
    config.deadLetter = { path: deadLetterFile, maxBytes: 1 << 20 };
  });
});

afterAll(async () => {
  await am?.stop();
  await ing?.stop();
});

describe('a real Alertmanager posting to preset alertmanager', () => {
  it('delivers one event per alert of a grouped notification, then a severity-0 clear with the same signature', async () => {
    am = await startAlertmanager({ url: `${ing.url}/events/webhook_am`, username: 'am', password: 'am-password' });
    const labels = (instance: string, severity: string) => ({ alertname: 'HighCPU', job: 'node', instance, severity });
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    await postAlerts(am.url, [
      { labels: labels('web-1', 'critical'), annotations: { summary: 'CPU high on web-1' }, startsAt },
      { labels: labels('web-2', 'warning'), annotations: { summary: 'CPU high on web-2' }, startsAt },
      { labels: labels('web-3', 'warning'), annotations: { summary: 'CPU high on web-3' }, startsAt },
    ]);
    // The alerts started a minute ago, so Alertmanager flushes the group as soon as its first alert
    // arrives, racing with the other two: it may first send part of the group, then the whole of
    // it. Wait for one notification (one receive time) that carries all three.
    const first = await waitFor(
      'one notification with all three firing alerts',
      async () => {
        const byNotification = new Map<unknown, Array<Record<string, unknown>>>();
        for (const e of logEvents().filter((e) => e.integration === 'am' && e.severity !== 0))
          byNotification.set(e.received_at, [...(byNotification.get(e.received_at) ?? []), e]);
        return [...byNotification.values()].find((events) => events.length === 3);
      },
      40_000,
      100,
    );
    expect(new Set(first.map((e) => e.source))).toEqual(new Set(['web-1', 'web-2', 'web-3']));
    const web1 = first.find((e) => e.source === 'web-1') as Record<string, unknown>;
    expect(web1).toMatchObject({
      severity: 5,
      class: 'HighCPU',
      manager: 'Alertmanager',
      description: 'CPU high on web-1',
    });

    await postAlerts(am.url, [
      { labels: labels('web-1', 'critical'), startsAt, endsAt: new Date(Date.now() - 1000).toISOString() },
    ]);
    const clear = await waitFor(
      'a clear for web-1',
      async () => logEvents().find((e) => e.integration === 'am' && e.source === 'web-1' && e.severity === 0),
      40_000,
      100,
    );
    expect(clear.signature).toBe(web1.signature);
    expect(clear.severity_name).toBe('clear');
  });
});

describe('the shipped Nagios/Icinga notification script, preset nagios', () => {
  it('posts a problem and its recovery, which clears it under the same signature', async () => {
    const env = {
      ...process.env,
      INTAKE_URL: `${ing.url}/events/webhook_nagios`,
      INTAKE_AUTHORIZATION: basic('nagios', 'nagios-password'),
    };
    const script = join(ROOT, 'examples/senders/notify-intake.sh');
    const problem = await run(
      'sh',
      [
        script,
        'PROBLEM',
        'web-9',
        '10.0.0.9',
        'HTTP',
        'CRITICAL',
        'HARD',
        'CRITICAL - "timeout" after 10s',
        '1763844181',
      ],
      env,
    );
    expect(problem).toMatchObject({ code: 0 });
    const recovery = await run(
      'sh',
      [script, 'RECOVERY', 'web-9', '10.0.0.9', 'HTTP', 'OK', 'HARD', 'HTTP OK', '1763844481'],
      env,
    );
    expect(recovery).toMatchObject({ code: 0 });
    const [p, r] = await waitFor('both events', async () => {
      const found = logEvents().filter((e) => e.integration === 'nagios');
      return found.length >= 2 ? found : undefined;
    });
    expect(p).toMatchObject({
      source: 'web-9',
      severity: 5,
      description: 'CRITICAL - "timeout" after 10s',
      agent_time: '2025-11-22T20:43:01.000Z',
    });
    expect(r).toMatchObject({ source: 'web-9', severity: 0, signature: p?.signature });
  });
});

describe('a hostile expression', () => {
  it('hits its time limit (422, dead letter) while other requests keep being answered', async () => {
    const started = Date.now();
    let hostileDoneAt = 0;
    const hostile = post(
      `${ing.url}/events/webhook_hostile`,
      { any: 1 },
      { authorization: basic('hostile', 'hostile-password') },
    ).then((r) => {
      hostileDoneAt = Date.now();
      return r;
    });
    await new Promise((r) => setTimeout(r, 200));
    const answeredAt: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await post(
        `${ing.url}/events/webhook_demo`,
        { source: `meanwhile-${i}`, severity: 1 },
        { authorization: basic(DEMO.user, DEMO.password) },
      );
      expect(res.status).toBe(200);
      answeredAt.push(Date.now());
    }
    const res = await hostile;
    expect(res.status).toBe(422);
    expect(res.json().message).toContain('D1012');
    // Stopped at its limit of CPU time, not before: the worker's CPU time counts all its threads
    // (V8's garbage collector runs beside the evaluation on another core), so the wall clock may
    // be shorter than the limit, but never shorter than half of it on this machine's two cores.
    expect(hostileDoneAt - started).toBeGreaterThanOrEqual(1500);
    const metrics = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    const charged = Number(
      /\s(\S+)$/.exec(
        metrics
          .split('\n')
          .find((l) => l.startsWith('intake_mapping_cpu_seconds_total{') && l.includes('integration="hostile"')) ??
          ' NaN',
      )?.[1],
    );
    expect(charged).toBeGreaterThanOrEqual(3);
    expect(charged).toBeLessThan(3 * 1.2 + 0.2);
    for (const at of answeredAt) expect(at).toBeLessThan(hostileDoneAt);
  });
});

describe('dead letter and replay', () => {
  const auth = basic('custom', 'custom-password');

  it('keeps a payload the mapping cannot turn into events, and the CLI replays it once the mapping is fixed', async () => {
    const res = await post(`${ing.url}/events/webhook_custom`, { hostname: 'db-7', level: 3 }, { authorization: auth });
    expect(res.status).toBe(422);
    expect(res.json()).toMatchObject({
      code: 'MAPPING_FAILED',
      errors: [{ index: 0, field: 'source', message: 'is required' }],
    });
    const kept = (await (
      await fetch(`${ing.adminUrl}/deadletter?kind=mapping&integration=custom&payload=true`)
    ).json()) as { entries: Array<{ id: string; payload: unknown }> };
    expect(kept.entries).toEqual([
      expect.objectContaining({
        id: res.headers.get('x-intake-dead-letter-id'),
        payload: { hostname: 'db-7', level: 3 },
      }),
    ]);
    // The store is deadLetter.path itself (a .jsonl default once named a file that was .sqlite).
    expect(existsSync(deadLetterFile)).toBe(true);

    const listed = await cli(['deadletter', 'list', '--admin-url', ing.adminUrl, '--integration', 'custom']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/ mapping +default\/custom +the mapping \(expression\)/);
    expect(listed.stdout).toContain('1 dead letter(s) listed');
    // -o yaml: the whole letters, payload included, for a program.
    const asYaml = await cli([
      'deadletter',
      'list',
      '-o',
      'yaml',
      '--admin-url',
      ing.adminUrl,
      '--integration',
      'custom',
    ]);
    expect((parse(asYaml.stdout) as typeof kept).entries).toEqual(kept.entries);
    // A reader that stops early (| head) ends the listing quietly: no EPIPE stack trace, exit 0.
    // The read end is closed before the CLI has its answer from the admin port, so its write fails.
    const piped = spawn(
      process.execPath,
      [join(ROOT, 'dist/cmd/intake.js'), 'deadletter', 'list', '-o', 'json', '--admin-url', ing.adminUrl],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    piped.stdout.destroy();
    let pipedErr = '';
    piped.stderr.on('data', (d) => (pipedErr += d));
    expect(await new Promise((resolve) => piped.on('exit', resolve))).toBe(0);
    expect(pipedErr).toBe('');

    const config = parse(readFileSync(ing.configPath, 'utf8')) as {
      routes: Array<{ name: string; mapping?: unknown }>;
    };
    (config.routes.find((r) => r.name === 'custom') as { mapping?: unknown }).mapping = FIXED;
    writeFileSync(ing.configPath, stringify(config));
    await waitFor(
      'fixed mapping loaded',
      async () => {
        const dry = await post(
          `${ing.url}/events/webhook_custom?dryRun=true`,
          { hostname: 'probe', level: 1 },
          { authorization: auth },
        );
        return dry.json().success === true;
      },
      10_000,
      100,
    );

    const replay = await cli(['deadletter', 'replay', '--admin-url', ing.adminUrl, '--integration', 'custom']);
    expect(replay.stdout).toContain('1 replayed, 0 failed, 0 skipped');
    expect(replay.code).toBe(0);
    const delivered = await waitFor('replayed event in the log', async () =>
      logEvents().find((e) => e.integration === 'custom' && e.source === 'db-7'),
    );
    expect(delivered.severity).toBe(3);
    expect(
      (await cli(['deadletter', 'list', '--admin-url', ing.adminUrl, '--integration', 'custom'])).stdout,
    ).toContain('0 dead letter(s) listed');
  });

  it('refuses a config file whose mapping fails its tests', async () => {
    const path = join(dirname(ing.configPath), 'bad.yaml');
    writeFileSync(
      path,
      stringify({
        routes: [
          route('t', { preset: 'nagios', tests: [{ input: { host: 'h', state: 'OK' }, expect: { severity: 5 } }] }),
        ],
      }),
    );
    const r = await cli([
      'ingester',
      '--config',
      path,
      '--listen',
      `127.0.0.1:${await freePort()}`,
      '--admin-listen',
      `127.0.0.1:${await freePort()}`,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('invalid mapping: tests[0]: event 0: severity: expected 5, got 0');
  });
});

const cli = (args: string[]) => run(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), ...args]);

function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
