/**
 * Activity through the built ingester (standalone file): after accepted and refused requests with
 * real reasons (wrong password, invalid body, mapping failure kept as a dead letter, suspended,
 * over the rate limit, too large, unknown integration, unknown API key), GET /status/activity on
 * the admin port and `intake status` (table and -o json) say what each integration received, who
 * was refused and why, and never a credential or a body.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jest } from '@jest/globals';
import { parse } from 'yaml';
import type { ActivityReport, ReportedActivity } from '../../api/activity.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';
import {
  API_KEY,
  basic,
  DEMO,
  post,
  startIngester,
  tenantAuth,
  tenantRoute,
  type RunningIngester,
} from './support/ingester.js';

jest.setTimeout(120_000);

const run = promisify(execFile);
const intake = (args: string[]) => run(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), ...args]);

const BROKEN_MAPPING = { expression: '{"source": host, "severity": level}' };
const SECRET_BODY_MARKER = 'body-marker-never-reported';
let ing: RunningIngester;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intake-e2e-activity-'));
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push(
      tenantRoute('mapped', 'team-a', { mapping: BROKEN_MAPPING }),
      tenantRoute('paused', 'team-a', { suspended: true }),
      tenantRoute('limited', 'team-b', { limits: { eventsPerSecond: 1, eventsBurst: 1 } }),
      tenantRoute('quiet', 'team-b'),
      tenantRoute('leaky', 'team-c'),
      tenantRoute('leaky-mapped', 'team-c', { mapping: { expression: '{"source": host, "severity": $number(pin)}' } }),
    );
    c.sinks = { log: { path: join(dir, 'events.jsonl') } };
    c.deadLetter = { path: join(dir, 'deadletter.sqlite') };
    (c.limits as Record<string, unknown>).bodyBytes = 4096;
  });
});
afterAll(async () => {
  await ing?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const events = (name: string, body: unknown, headers: Record<string, string>) =>
  post(`${ing.url}/events/webhook_${name}`, body, { 'user-agent': 'activity-test/1.0', ...headers });
const ok = { source: 'host-1', severity: 'critical', summary: SECRET_BODY_MARKER };

async function report(): Promise<ActivityReport> {
  const res = await fetch(`${ing.adminUrl}/status/activity`);
  expect(res.status).toBe(200);
  return (await res.json()) as ActivityReport;
}
const find = (list: ReportedActivity[], name: string): ReportedActivity | undefined =>
  list.find((a) => a.name === name);

describe('activity on the admin port and in intake status', () => {
  beforeAll(async () => {
    const demo = { authorization: basic(DEMO.user, DEMO.password) };
    expect((await events('demo', [ok, ok, ok], demo)).status).toBe(200);
    expect((await events('demo', ok, demo)).status).toBe(200);
    expect((await events('demo', ok, { authorization: basic(DEMO.user, 'wrong-password') })).status).toBe(401);
    expect((await events('demo', { severity: 'critical' }, demo)).status).toBe(400);
    expect((await events('demo', { ...ok, pad: 'x'.repeat(8000) }, demo)).status).toBe(413);
    expect((await events('mapped', { hostname: 'h', level: 'critical' }, tenantAuth('mapped'))).status).toBe(422);
    expect((await events('paused', ok, tenantAuth('paused'))).status).toBe(403);
    expect((await events('limited', ok, tenantAuth('limited'))).status).toBe(200);
    expect((await events('limited', ok, tenantAuth('limited'))).status).toBe(429);
    expect((await events('nobody', ok, { authorization: basic('nobody', 'x') })).status).toBe(401);
    const points = [{ metric: 'cpu', data: 1, source: 'a' }];
    expect((await post(`${ing.url}/v1/integrations/metrics`, points, { apikey: API_KEY })).status).toBe(200);
    expect((await post(`${ing.url}/v1/integrations/metrics`, points, { apikey: 'not-a-key' })).status).toBe(401);
  });

  it('GET /status/activity: accepted events, refusals by reason, the last refusals with who sent them', async () => {
    const r = await report();
    const demo = find(r.webhookIntegrations, 'demo') as ReportedActivity;
    expect(demo).toMatchObject({ namespace: 'default', eventsLastHour: 4, refusedLastHour: 3 });
    expect(demo.refusalsLastHour).toEqual({ unauthorized: 1, invalid: 1, too_large: 1 });
    expect(Date.parse(demo.lastEventTime as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(Date.parse(demo.lastRefusalTime as string)).toBeGreaterThanOrEqual(Date.parse(demo.lastEventTime as string));
    // Refusals of authenticated requests, with the User-Agent the sender claimed...
    expect(demo.recentRefusals.map((f) => f.status)).toEqual([413, 400]);
    expect(demo.recentRefusals[1]).toMatchObject({ remoteAddress: '127.0.0.1', userAgent: 'activity-test/1.0' });
    expect(demo.recentRefusals[1]?.message).toMatch(/problem.*source/);
    // ...apart from the wrong password, which anyone can send: its address and a count only.
    expect(demo.unauthenticatedSenders).toEqual([
      expect.objectContaining({
        status: 401,
        code: 'UNAUTHORIZED',
        reason: 'unauthorized',
        remoteAddress: '127.0.0.1',
        count: 1,
      }),
    ]);
    expect(JSON.stringify(demo.unauthenticatedSenders)).not.toContain('activity-test');

    const mapped = find(r.webhookIntegrations, 'mapped') as ReportedActivity;
    expect(mapped.refusalsLastHour).toEqual({ mapping: 1 });
    expect(mapped.recentRefusals[0]).toMatchObject({ status: 422, code: 'MAPPING_FAILED', reason: 'mapping' });
    expect(mapped.recentRefusals[0]?.deadLetterId).toMatch(/.+/);
    expect(mapped.lastEventTime).toBeUndefined();

    expect(find(r.webhookIntegrations, 'paused')?.refusalsLastHour).toEqual({ suspended: 1 });
    const limited = find(r.webhookIntegrations, 'limited') as ReportedActivity;
    expect(limited).toMatchObject({ eventsLastHour: 1, refusalsLastHour: { rate_limited: 1 } });
    expect(find(r.webhookIntegrations, 'quiet')).toBeUndefined();
    expect(find(r.webhookIntegrations, 'nobody')).toBeUndefined();
    expect(r.unattributed.webhookIntegrations.refusalsLastHour).toEqual({ unauthorized: 1 });
    expect(r.unattributed.webhookIntegrations.recentRefusals).toEqual([]);
    expect(r.unattributed.webhookIntegrations.unauthenticatedSenders?.[0]).toMatchObject({ count: 1 });

    expect(find(r.apiKeys, 'default')).toMatchObject({ eventsLastHour: 1, refusedLastHour: 0 });
    expect(r.unattributed.apiKeys.refusalsLastHour).toEqual({ unauthorized: 1 });

    const text = JSON.stringify(r);
    const headers = [basic(DEMO.user, DEMO.password), basic(DEMO.user, 'wrong-password')].map((h) => h.slice(6));
    for (const secret of [...headers, DEMO.password, 'wrong-password', 'not-a-key', API_KEY, SECRET_BODY_MARKER])
      expect(text).not.toContain(secret);
  });

  it('never quotes a refused body, in the answer or the activity: not JSON, or a value the mapping could not read', async () => {
    const marker = 'password=hunter2';
    const notJson = await events('leaky', `${marker}&user=admin`, tenantAuth('leaky'));
    expect(notJson.status).toBe(400);
    expect(notJson.json()).toMatchObject({ code: 'INVALID_JSON', message: expect.stringMatching(/at position 0 /) });
    const unreadable = await events('leaky-mapped', { host: 'h', pin: marker }, tenantAuth('leaky-mapped'));
    expect(unreadable.status).toBe(422);
    expect(unreadable.json()).toMatchObject({ code: 'MAPPING_FAILED', message: expect.stringMatching(/D3030/) });
    for (const answer of [notJson, unreadable]) expect(answer.text).not.toContain('hunter2');
    const leaky = await waitFor('both refusals recorded', async () => {
      const r = await report();
      const got = [find(r.webhookIntegrations, 'leaky'), find(r.webhookIntegrations, 'leaky-mapped')];
      return got.every((a) => a?.refusedLastHour === 1) ? got : undefined;
    });
    expect(leaky.map((a) => a?.recentRefusals[0]?.reason)).toEqual(['invalid', 'mapping']);
    expect(JSON.stringify(await report())).not.toContain('hunter2');
  });

  it('intake status prints a table and the recent refusals; -o json the report', async () => {
    const table = await intake(['status', '--admin-url', ing.adminUrl]);
    const demoLine = table.stdout.split('\n').find((l) => /\sdemo\s/.test(l)) as string;
    expect(demoLine).toMatch(/^WebhookIntegration\s+default\s+demo\s+\d+s\s+4\s+\d+s\s+3\s+/);
    expect(demoLine).toMatch(/unauthorized=1/);
    expect(table.stdout).toMatch(/^KIND\s+NAMESPACE\s+NAME\s+LAST EVENT\s+EVENTS 1H/m);
    expect(table.stdout).toMatch(/recent refusals \(newest first\):/);
    expect(table.stdout).toMatch(
      /team-a\/mapped {2}422 MAPPING_FAILED \(mapping\) {2}from 127\.0\.0\.1.*\[dead letter /,
    );
    const json = JSON.parse(
      (await intake(['status', '--admin-url', ing.adminUrl, '-o', 'json'])).stdout,
    ) as ActivityReport;
    expect(find(json.webhookIntegrations, 'demo')?.eventsLastHour).toBe(4);
  });

  it('intake status -o json and -o yaml print the same report', async () => {
    const json = JSON.parse(
      (await intake(['status', '--admin-url', ing.adminUrl, '-o', 'json'])).stdout,
    ) as ActivityReport;
    const yaml = await intake(['status', '-o', 'yaml', '--admin-url', ing.adminUrl]);
    expect(yaml.stderr).toBe('');
    expect(find((parse(yaml.stdout) as ActivityReport).webhookIntegrations, 'demo')?.eventsLastHour).toBe(
      find(json.webhookIntegrations, 'demo')?.eventsLastHour,
    );
  });

  it('intake status names the admin URL it could not reach', async () => {
    await expect(intake(['status', '--admin-url', 'http://127.0.0.1:1'])).rejects.toMatchObject({
      stderr: expect.stringContaining("cannot reach the ingester's admin listener at http://127.0.0.1:1"),
    });
  });
});
