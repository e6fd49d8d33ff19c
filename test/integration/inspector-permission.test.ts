/**
 * Who may read the event inspector's captured requests, against the real kube-apiserver: two
 * users of one namespace, one bound to the chart's intake-view ClusterRole, the other to its
 * intake-edit ClusterRole (which holds the verb inspect on webhookintegrations). Through the built
 * `intake console --auth token` in front of a built ingester that captured a real Alertmanager
 * request: the viewer sees the integration but gets 403 for its captures, the editor reads the
 * list and the body. The console asks with a SelfSubjectAccessReview made as each user.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { jest } from '@jest/globals';
import { ROOT } from '../support/paths.js';
import { startIngester, tenantAuth, tenantRoute, post, type RunningIngester } from '../e2e/support/ingester.js';
import { apply, applyCrds, createNamespace, kubectl, requireCluster, uniqueName } from './support/cluster.js';
import { consoleSession, deleteTenantRoles, viewerAndEditor } from './support/tenant-users.js';
import { launchBrowser, screenshot, screenshotForDocs, startConsole, type ConsoleProc } from './support/console.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';

jest.setTimeout(120_000);

const ns = uniqueName('inspect');
const release = uniqueName('insp');
const PAYLOAD = JSON.stringify(
  (
    JSON.parse(readFileSync(join(ROOT, 'test/unit/api/mapping/fixtures/alertmanager.json'), 'utf8')) as {
      cases: Array<{ input: unknown }>;
    }
  ).cases[0]?.input,
);
let ing: RunningIngester;
let receiver: EventReceiver;
let browser: Browser;
const spool = mkdtempSync(join(tmpdir(), 'intake-inspect-int-'));
let consoleProc: ConsoleProc;
let viewerToken: string;
let editorToken: string;

beforeAll(async () => {
  requireCluster();
  await applyCrds();
  await createNamespace(ns);
  ({ viewerToken, editorToken } = await viewerAndEditor(release, ns));
  await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: alerts, namespace: ${ns}}
spec:
  mapping: {preset: alertmanager}
  inspect: {enabled: true}
`);
  receiver = await startEventReceiver();
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push(
      tenantRoute('alerts', ns, {
        mapping: { preset: 'alertmanager' },
        inspect: { enabled: true },
        rules: [{ name: 'pages', match: { severity: { min: 'critical' } }, destinations: ['tickets'] }],
      }),
    );
    c.spool = { path: spool };
    c.destinations = [{ name: 'tickets', default: true, http: { url: receiver.url } }];
  });
  expect((await post(`${ing.url}/events/webhook_alerts`, PAYLOAD, tenantAuth('alerts'))).status).toBe(200);
  consoleProc = await startConsole(['--auth', 'token', '--ingester-admin-url', ing.adminUrl]);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await consoleProc?.stop();
  await ing?.stop();
  await receiver?.close();
  rmSync(spool, { recursive: true, force: true });
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
  await deleteTenantRoles(release);
});

const signIn = (kubeToken: string) => consoleSession(consoleProc.base, kubeToken);

const get = async (session: Record<string, string>, path: string) => {
  const res = await fetch(`${consoleProc.base}/api/namespaces/${ns}/webhookintegrations/alerts${path}`, {
    headers: session,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

it('a viewer sees the integration but none of its captured requests', async () => {
  const viewer = await signIn(viewerToken);
  expect((await get(viewer, '')).status).toBe(200);
  const refused = await get(viewer, '/inspector');
  expect(refused.status).toBe(403);
  expect(refused.body.message).toContain('"inspect"');
  expect(JSON.stringify(refused.body)).not.toContain('HighCPU');
  expect((await get(viewer, '/inspector/anything')).status).toBe(403);
});

it('an editor (the chart’s aggregated edit role) reads the list and the body', async () => {
  const editor = await signIn(editorToken);
  const list = await get(editor, '/inspector');
  expect(list.status).toBe(200);
  const requests = list.body.requests as Array<{ id: string; eventCount: number }>;
  expect(requests).toHaveLength(1);
  expect(requests[0]?.eventCount).toBe(2);
  const one = await get(editor, `/inspector/${requests[0]?.id}`);
  expect(one.status).toBe(200);
  expect(one.body.body).toBe(PAYLOAD);
});

describe('the console page', () => {
  async function pageOf(kubeToken: string) {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const p = await ctx.newPage();
    await p.goto(consoleProc.base);
    await p.locator('#token').fill(kubeToken);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(/#\/ns\//);
    await p.goto(`${consoleProc.base}/#/ns/${ns}/webhookintegrations/alerts`);
    await p.locator('#h-inspector').waitFor();
    return { ctx, p };
  }

  it('shows an editor the request with its mapped events, routing and delivery attempts, and opens it in the playground', async () => {
    const { ctx, p } = await pageOf(editorToken);
    await p.locator('table.captured tbody tr').first().waitFor();
    expect(await p.locator('table.captured tbody tr').count()).toBe(1);
    await p.locator('table.captured tbody tr button.link').first().click();
    const detail = p.locator('.inspected');
    await detail.locator('pre.captured-body').waitFor();
    expect(await detail.locator('pre.captured-body').textContent()).toBe(PAYLOAD);
    const events = detail.locator('ol.captured-events > li');
    expect(await events.count()).toBe(2);
    expect(await events.nth(0).textContent()).toContain('rule pages → tickets');
    expect(await events.nth(1).textContent()).toContain('no rule matched → tickets');
    // Delivery attempts arrive as the ingester delivers: refresh the detail until both show.
    for (let i = 0; i < 75 && (await detail.locator('ul.attempts li').count()) < 2; i++) {
      await new Promise((r) => setTimeout(r, 200));
      await p.getByRole('button', { name: 'Refresh' }).click();
    }
    expect(await detail.locator('ul.attempts li').count()).toBe(2);
    expect(await detail.locator('ul.attempts').first().textContent()).toMatch(/tickets: 200, \d+ ms, delivered/);
    expect(await detail.locator('dl.headers').textContent()).not.toMatch(/authorization|alerts-password/i);
    await screenshot(p, 'inspector-detail');
    await screenshotForDocs(p, 'inspector', { of: p.locator('section[aria-labelledby="h-inspector"]') });
    await p.getByRole('button', { name: 'Open in playground' }).click();
    expect(await p.locator('#playground-payload').inputValue()).toContain('HighCPU');
    await ctx.close();
  });

  it('shows a viewer the refusal and no payload', async () => {
    const { ctx, p } = await pageOf(viewerToken);
    const error = p.locator('section[aria-labelledby="h-inspector"] .error');
    await error.waitFor();
    expect(await error.textContent()).toContain('"inspect"');
    expect(await p.locator('table.captured').count()).toBe(0);
    expect(await p.locator('section[aria-labelledby="h-inspector"]').textContent()).not.toContain('HighCPU');
    await screenshot(p, 'inspector-forbidden');
    await ctx.close();
  });
});
