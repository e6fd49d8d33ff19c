/**
 * The web console (docs/console.md) in a real browser: Debian's chromium driven by playwright-core,
 * against the test API server, the built operator and an ingester in Kubernetes mode, and the built
 * `intake console` in both modes (kubeconfig: the one-time URL token; token: users' own Kubernetes
 * tokens). Lists, details, create, the mapping editor, activity and sign-in, plus live updates, GitOps,
 * rotate, suspend, edit and delete.
 * Screenshots of the main pages land in test-results/console/ (gitignored).
 *
 * The activity tests (Last Event, refusals) read what the operator merges from the ingester's
 * activity into status.activity: the ingester plays the admin Service's one pod (pod-network.ts).
 */
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { jest } from '@jest/globals';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import {
  apply,
  applyCrds,
  createNamespace,
  KUBECONFIG,
  kubectl,
  requireCluster,
  ROOT,
  startIngester,
  startOperator,
  uniqueName,
  type Proc,
} from './support/cluster.js';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startConsole as startConsoleServer } from '../../console/server/main.js';
import { ADMIN_PORT, ADMIN_SERVICE, applyAdminService } from './support/admin-service.js';
import { startPodNetwork, type PodNetwork } from './support/pod-network.js';
import {
  launchBrowser,
  screenshot,
  screenshotForDocs,
  SCREENSHOTS,
  signInLocal,
  startConsole,
  type ConsoleProc,
} from './support/console.js';
import { waitFor } from '../support/waiting.js';

jest.setTimeout(180_000);

const system = uniqueName('intake-system');
const teamA = uniqueName('team-a');
const teamB = uniqueName('team-b');
let operator: Proc;
let ingester: Proc;
let network: PodNetwork;
/** The ingester admin Service the operator polls for activity, with the ingester as its one pod. */
const INGESTER_POD = '192.0.2.30';
let localConsole: ConsoleProc;
let tokenConsole: ConsoleProc;
let browser: Browser;
let context: BrowserContext;
let page: Page;

async function secretValue(namespace: string, name: string, key: string): Promise<string> {
  const r = await kubectl(['get', 'secret', '-n', namespace, name, '-o', `jsonpath={.data.${key}}`]);
  if (r.code !== 0) throw new Error(r.stderr);
  return Buffer.from(r.stdout, 'base64').toString('utf8');
}

/** A raw request, so the Host header can be anything (fetch does not let a caller set it). */
function raw(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolvePromise, reject) => {
    // A body goes with its length (Node sends a DELETE's body without one otherwise); one connection each.
    const sized = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers: sized, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What authorizes the test browser's requests to the local console: its session cookie and the
 * session secret its page keeps in sessionStorage (sent as X-Intake-Session).
 */
async function browserSession(): Promise<{ cookie: string; 'x-intake-session': string }> {
  if (new URL(page.url()).origin !== localConsole.base) await page.goto(`${localConsole.base}/#/ns/${teamA}`);
  const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const secret = await page.evaluate(() => sessionStorage.getItem('intake-console-session') ?? '');
  expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return { cookie, 'x-intake-session': secret };
}

async function openNamespace(p: Page, ns: string): Promise<void> {
  await p.goto(`${localConsole.base}/#/ns/${ns}`);
  await p.locator('h2#h-webhookintegrations').waitFor();
}

beforeAll(async () => {
  requireCluster();
  await applyCrds();
  for (const ns of [system, teamA, teamB]) await createNamespace(ns);
  ingester = await startIngester(system);
  // The ingester as the admin Service's one pod, so the operator collects its activity.
  network = await startPodNetwork();
  network.routes.set(`${INGESTER_POD}:${ADMIN_PORT}`, Number(new URL(ingester.adminUrl).port));
  await applyAdminService(system, [INGESTER_POD]);
  // status.url is the ingester's own address, so the console's test events reach it as senders would.
  operator = await startOperator(
    system,
    [teamA, teamB],
    ['--public-base-url', ingester.url, '--ingester-admin-service', ADMIN_SERVICE, '--activity-interval', '1s'],
    network.env,
  );
  localConsole = await startConsole();
  tokenConsole = await startConsole(['--auth', 'token']);
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  page = await context.newPage();
  // The printed URL signs this browser in (its one-time token becomes a session cookie).
  await page.goto(localConsole.url);
  await page.waitForURL(/#\/ns\//);
});

afterAll(async () => {
  await browser?.close();
  await localConsole?.stop();
  await tokenConsole?.stop();
  await operator?.stop();
  await ingester?.stop();
  await network?.close();
  await kubectl(['delete', 'namespace', teamA, teamB, system, '--wait=false']);
});

describe('intake console (kubeconfig mode)', () => {
  it('1. creates an integration from the form: Ready and its URL show within 5 s', async () => {
    await openNamespace(page, teamA);
    await screenshot(page, '01-list-empty');
    await page.getByRole('link', { name: 'New integration' }).click();
    await page.locator('#f-name').fill('checkout');
    await screenshot(page, '02-create-form');
    const clicked = Date.now();
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(new RegExp(`#/ns/${teamA}/webhookintegrations/checkout$`));
    await page.locator('h1 .badge.ok', { hasText: 'Ready' }).waitFor({ timeout: 5000 });
    await page.locator('.url-value', { hasText: `${ingester.url}/events/webhook_checkout` }).waitFor({ timeout: 5000 });
    const elapsed = Date.now() - clicked;
    expect(elapsed).toBeLessThan(5000);
    expect(await page.locator('.url-value').textContent()).toBe(`${ingester.url}/events/webhook_checkout`);
    await screenshot(page, '03-detail');
    // And it is a real resource, as kubectl sees it.
    const r = await kubectl(['get', 'webhookintegration', '-n', teamA, 'checkout', '-o', 'jsonpath={.status.url}']);
    expect(r.stdout).toBe(`${ingester.url}/events/webhook_checkout`);
  });

  it('is usable from the keyboard: Tab reaches the controls (with a visible focus ring), Enter acts', async () => {
    await openNamespace(page, teamA);
    const focused = () =>
      page.evaluate(() => ({
        text: document.activeElement?.textContent?.trim() ?? '',
        outline: document.activeElement ? getComputedStyle(document.activeElement).outlineStyle : '',
      }));
    const tabTo = async (text: string) => {
      for (let i = 0; i < 40 && (await focused()).text !== text; i++) await page.keyboard.press('Tab');
      return focused();
    };
    expect(await tabTo('New integration')).toEqual({ text: 'New integration', outline: 'solid' });
    await page.keyboard.press('Enter');
    await page.locator('#f-name').waitFor();
    await page.keyboard.press('Tab');
    await tabTo('Form');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-name');
    await page.keyboard.type('keyboard');
    expect((await tabTo('Create')).text).toBe('Create');
    await page.keyboard.press('Enter');
    await page.waitForURL(/webhookintegrations\/keyboard$/);
    await page.locator('h1 .badge.ok').waitFor({ timeout: 10_000 });
    expect(await page.locator('h1').textContent()).toContain('keyboard');
  });

  it('2. reveals the password and sends a test event: the answer 200 is shown; copy as curl works', async () => {
    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/checkout`);
    await page.getByRole('button', { name: 'Reveal' }).click();
    const password = await secretValue(teamA, 'intake-webhook-checkout', 'password');
    await page.locator('.secret-value', { hasText: password }).waitFor();
    expect(await page.locator('.secret-value').textContent()).toBe(password);
    expect(await page.locator('.username-value').textContent()).toBe('checkout');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.answer .http-status').waitFor();
    expect(await page.locator('.answer .http-status').textContent()).toBe('200');
    expect(await page.locator('.answer pre').textContent()).toContain('"processed": 1');
    await page.getByRole('button', { name: 'Copy as curl' }).click();
    const curl = await page.locator('#curl-command').inputValue();
    expect(curl).toContain(`-u 'checkout:${password}'`);
    expect(curl).toContain(`'${ingester.url}/events/webhook_checkout'`);
    await screenshot(page, '04-test-event');
  });

  it('4. an invalid preset in the form shows the API server message and creates nothing', async () => {
    await openNamespace(page, teamA);
    await page.getByRole('link', { name: 'New integration' }).click();
    await page.locator('#f-name').fill('bad-preset');
    await page.locator('#f-preset').fill('not-a-preset');
    await page.getByRole('button', { name: 'Create' }).click();
    const error = page.locator('form .error');
    await error.waitFor();
    expect(await error.textContent()).toContain('spec.mapping.preset: Unsupported value: "not-a-preset"');
    await screenshot(page, '05-validation-error');
    const r = await kubectl(['get', 'webhookintegration', '-n', teamA, 'bad-preset']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('NotFound');
  });

  it('5. the mapping playground shows the events of an Alertmanager notification and runs spec.mapping.tests', async () => {
    await openNamespace(page, teamA);
    await page.getByRole('link', { name: 'New integration' }).click();
    // The YAML tab: the same object as the form, with what the form has no field for (tests).
    await page.locator('#f-name').fill('alertmanager');
    await page.getByRole('tab', { name: 'YAML' }).click();
    const yaml = await page.locator('#f-yaml').inputValue();
    await page.locator('#f-yaml').fill(
      yaml.replace(
        'spec: {}',
        `spec:
  mapping:
    preset: alertmanager
    tests:
      - input: {receiver: intake, status: firing, alerts: [{status: firing, labels: {alertname: Down, instance: web-9, severity: critical}, annotations: {}, startsAt: "2026-11-22T20:00:00Z", endsAt: "0001-01-01T00:00:00Z", fingerprint: f00d}]}
        expect: [{source: web-9, severity: 5, signature: "alertmanager:f00d"}]`,
      ),
    );
    await screenshotForDocs(page, 'editor');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/webhookintegrations\/alertmanager$/);
    await page.locator('h1 .badge.ok', { hasText: 'Ready' }).waitFor({ timeout: 10_000 });
    // Prefilled with the preset's sample notification (two alerts); the ingester's dry run maps it.
    expect(await page.locator('#playground-payload').inputValue()).toContain('"alertname": "HighCPU"');
    await page.getByRole('button', { name: 'Map', exact: true }).click();
    await page.locator('.mapped-events').waitFor();
    expect(await page.locator('.mapped .http-status').textContent()).toBe('200');
    expect(await page.locator('.mapped h3').textContent()).toBe('2 event(s)');
    const events = JSON.parse((await page.locator('.mapped-events').textContent()) ?? '') as Array<
      Record<string, unknown>
    >;
    expect(events.map((e) => [e.signature, e.source, e.severity])).toEqual([
      ['alertmanager:61a934e31c3bc048', 'web-1', 5],
      ['alertmanager:0c0d6806cb718724', 'web-2', 2],
    ]);
    await page.getByRole('button', { name: /Run spec.mapping.tests/ }).click();
    await page.locator('.test-results li').waitFor();
    expect(await page.locator('.test-results li').allTextContents()).toEqual(['tests[0]: passed']);
    await screenshot(page, '06-mapping-playground');
    await screenshotForDocs(page, 'playground', { of: page.locator('section[aria-labelledby="h-playground"]') });
  });

  it('5b. a runaway expression in spec.mapping.tests is shown timed out, never passed, and the tests after it not run', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: runaway, namespace: ${teamA}}
spec:
  mapping:
    expression: '{"n": $count($distinct([1..100000])) + $count($distinct([1..100000]))}'
    tests:
      - {input: {}, expect: {n: 200000}}
      - {input: {}, expect: {n: 200000}}
`);
    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/runaway`);
    await page.getByRole('button', { name: /Run spec.mapping.tests/ }).click();
    await page.locator('.test-results li').first().waitFor({ timeout: 20_000 });
    const shown = await page.locator('.test-results li').allTextContents();
    expect(shown[0]).toMatch(/^tests\[0\]: timed out: D1012/);
    expect(shown[1]).toBe('tests[1]: not run: an earlier test timed out');
    await screenshot(page, '06b-mapping-tests-timed-out');
  });

  it('2b. a signed integration (Standard Webhooks): the signing secret shows; the test event, the playground and copy as curl are signed and answered 200', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: signed, namespace: ${teamA}}
spec:
  mapping: {preset: alertmanager}
  authentication:
    mode: signature
    signature: {scheme: standard-webhooks}
`);
    // From another integration's page (test 2's): this page starts afresh, with the preset's sample.
    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/signed`);
    await page.locator('h1 .badge.ok', { hasText: 'Ready' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#test-payload').inputValue()).toContain('"alertname": "HighCPU"');
    // The test event (the preset's sample: two alerts), signed with the current signing secret.
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.answer .http-status').waitFor();
    expect(await page.locator('.answer .http-status').textContent()).toBe('200');
    expect(await page.locator('.answer pre').textContent()).toContain('"processed": 2');
    // The playground's dry run goes through the same signed request.
    await page.getByRole('button', { name: 'Map', exact: true }).click();
    await page.locator('.mapped-events').waitFor();
    expect(await page.locator('.mapped .http-status').textContent()).toBe('200');
    expect(await page.locator('.mapped h3').textContent()).toBe('2 event(s)');

    // No password in mode signature: the scheme and the signing secret, masked until revealed.
    expect(await page.locator('.signature-scheme').textContent()).toContain('standard-webhooks');
    expect(await page.locator('.secret-value').count()).toBe(0);
    expect(await page.locator('.username-value').count()).toBe(0);
    expect(await page.locator('.signing-secret-value').textContent()).toBe('••••••••••••');
    await page.getByRole('button', { name: 'Reveal' }).click();
    const signingSecret = await secretValue(teamA, 'intake-webhook-signed', 'signingSecret');
    expect(signingSecret).toMatch(/^whsec_/);
    await page.locator('.signing-secret-value', { hasText: signingSecret }).waitFor();

    // Copy as curl: a command that signs with openssl when it runs; run by the shell, it is accepted.
    await page.getByRole('button', { name: 'Copy as curl' }).click();
    const curl = await page.locator('#curl-command').inputValue();
    expect(curl).toContain('webhook-signature: v1,$SIG');
    expect(curl).not.toContain(' -u ');
    const answer = await new Promise<string>((resolvePromise, reject) =>
      execFile('sh', ['-c', curl], (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolvePromise(stdout))),
    );
    expect(JSON.parse(answer)).toMatchObject({ success: true, response: { processed: 2, received: 2 } });
    await screenshot(page, '04b-signed-test-event');
  });

  it('lists live: a change made with kubectl appears without a reload; a GitOps-managed object cannot be edited', async () => {
    await openNamespace(page, teamA);
    await page.locator('tr[data-name="checkout"]').waitFor();
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata:
  name: from-git
  namespace: ${teamA}
  labels: {argocd.argoproj.io/instance: payments}
spec: {}
`);
    const row = page.locator('tr[data-name="from-git"]');
    await row.locator('.badge.ok', { hasText: 'Ready' }).waitFor({ timeout: 10_000 });
    expect(await row.locator('.badge.gitops').textContent()).toBe('Argo CD');
    await screenshot(page, '07-list-live');
    await row.getByRole('link', { name: 'from-git' }).click();
    await page.locator('.notice', { hasText: 'Managed by Argo CD (payments)' }).waitFor();
    expect(await page.getByRole('button', { name: 'Suspend' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Delete' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: /Rotate/ }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Edit' }).isDisabled()).toBe(true);
  });

  it('a GitOps-managed object opened at its edit address before the live list arrives cannot be saved; the server refuses changing it', async () => {
    await apply(`apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata:
  name: flux-managed
  namespace: ${teamA}
  labels: {kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: flux-system}
spec: {}
`);
    // The live list never arrives on this page (as when it is slow, or listing is forbidden).
    const p = await context.newPage();
    await p.route('**/api/namespaces/*/live', () => undefined);
    try {
      await p.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/flux-managed/edit`);
      await p.locator('#f-name').waitFor();
      await p.locator('.notice', { hasText: 'Managed by Flux (flux-system/apps)' }).waitFor();
      expect(await p.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
      await screenshot(p, '07b-gitops-edit-locked');
    } finally {
      await p.close();
    }
    // The server holds the lock itself: an edit, a patch (suspend, rotate) or a delete is refused.
    const session = await browserSession();
    const host = `127.0.0.1:${localConsole.port}`;
    const path = `/api/namespaces/${teamA}/webhookintegrations/flux-managed`;
    const current = JSON.parse((await raw(localConsole.port, path, { host, ...session })).body) as {
      metadata: Record<string, unknown>;
    };
    for (const [method, body] of [
      ['PUT', JSON.stringify({ ...current, spec: { suspend: true } })],
      ['PATCH', JSON.stringify({ spec: { suspend: true } })],
      ['PATCH', JSON.stringify({ metadata: { annotations: { 'intake.dev/rotate': 'now' } } })],
      ['DELETE', '{}'],
    ] as const) {
      const res = await raw(
        localConsole.port,
        path,
        { host, ...session, 'content-type': 'application/json' },
        method,
        body,
      );
      expect({ method, status: res.status }).toEqual({ method, status: 409 });
      expect(JSON.parse(res.body)).toMatchObject({
        error: 'gitops_managed',
        message: expect.stringContaining(
          `WebhookIntegration ${teamA}/flux-managed is managed by Flux (flux-system/apps): change it in Git`,
        ),
      });
    }
    const after = await kubectl([
      'get',
      'webhookintegration',
      '-n',
      teamA,
      'flux-managed',
      '-o',
      'jsonpath={.spec.suspend} {.metadata.annotations}',
    ]);
    expect(after.code).toBe(0);
    expect(after.stdout).not.toContain('true');
    expect(after.stdout).not.toContain('intake.dev/rotate');
    // An object nobody manages is changed as before (the check reads, then lets the write through).
    const free = await raw(
      localConsole.port,
      `/api/namespaces/${teamA}/webhookintegrations/checkout`,
      { host, ...session, 'content-type': 'application/json' },
      'PATCH',
      JSON.stringify({ metadata: { labels: { checked: 'yes' } } }),
    );
    expect(free.status).toBe(200);
  });

  it('rotates (the grace period shown), suspends and resumes, edits in YAML and deletes', async () => {
    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/checkout`);
    await page.locator('h1 .badge.ok').waitFor();
    expect(await page.locator('.rotation').textContent()).toContain('none (the previous one stops working at once');
    const before = await secretValue(teamA, 'intake-webhook-checkout', 'password');
    await page.getByRole('button', { name: 'Rotate password' }).click();
    await page.locator('.notice', { hasText: 'Rotation requested' }).waitFor();
    const after = await waitFor(
      'the rotated password',
      async () => {
        const p = await secretValue(teamA, 'intake-webhook-checkout', 'password');
        return p !== before ? p : undefined;
      },
      10_000,
      200,
    );
    expect(after).not.toBe(before);

    await page.getByRole('button', { name: 'Suspend' }).click();
    await page.locator('h1 .badge.warn', { hasText: 'Suspended' }).waitFor();
    expect(
      (await kubectl(['get', 'webhookintegration', '-n', teamA, 'checkout', '-o', 'jsonpath={.spec.suspend}'])).stdout,
    ).toBe('true');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Suspend' }).waitFor();
    // Not suspended: spec.suspend absent, which the CRD defaults to false.
    expect(
      (await kubectl(['get', 'webhookintegration', '-n', teamA, 'checkout', '-o', 'jsonpath={.spec.suspend}'])).stdout,
    ).toBe('false');

    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('tab', { name: 'YAML' }).click();
    const yaml = await page.locator('#f-yaml').inputValue();
    expect(yaml).toContain('name: checkout');
    await page.locator('#f-yaml').fill(yaml.replace(/^spec:.*$/m, 'spec:\n  credentials: {rotationGracePeriod: 1h}'));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('.rotation', { hasText: 'Rotation grace period: 1h' }).waitFor();
    expect(
      (
        await kubectl([
          'get',
          'webhookintegration',
          '-n',
          teamA,
          'checkout',
          '-o',
          'jsonpath={.spec.credentials.rotationGracePeriod}',
        ])
      ).stdout,
    ).toBe('1h');

    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/from-git`);
    await page.locator('h1 .badge.gitops').waitFor();
    await kubectl(['label', 'webhookintegration', '-n', teamA, 'from-git', 'argocd.argoproj.io/instance-']);
    // Once Argo CD no longer manages it (the label removed, seen live), it may be deleted.
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Really delete from-git' }).click();
    await page.waitForURL(new RegExp(`#/ns/${teamA}$`));
    await waitFor(
      'from-git deleted',
      async () => (await kubectl(['get', 'webhookintegration', '-n', teamA, 'from-git'])).stderr.includes('NotFound'),
      10_000,
      200,
    );
    expect(await page.locator('tr[data-name="from-git"]').count()).toBe(0);
  });

  it('renders every field of status.activity (a faked stream: every reason, a dead-letter id, ten refusals)', async () => {
    const now = Date.now();
    const ago = (s: number) => new Date(now - s * 1000).toISOString();
    const minuteAgo = (m: number) => new Date((Math.floor(now / 60_000) - m) * 60_000).toISOString();
    const demo = {
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      metadata: { name: 'demo', namespace: 'activity-demo' },
      spec: {},
      status: {
        url: 'https://intake.test/events/webhook_demo',
        conditions: [{ type: 'Ready', status: 'True', reason: 'Published', message: '', lastTransitionTime: ago(600) }],
        activity: {
          lastEventTime: ago(20),
          lastRefusalTime: ago(5),
          eventsLastHour: 42,
          refusedLastHour: 3,
          refusalsLastHour: { unauthorized: 2, mapping: 1 },
          // Three minutes, twenty minutes ago: the same 42 events and 3 refusals, per minute.
          minutes: { start: minuteAgo(20), events: [12, 0, 30], refused: [0, 2, 1] },
          recentRefusals: [
            {
              time: ago(5),
              status: 401,
              code: 'INTAKE_UNAUTHORIZED',
              reason: 'unauthorized',
              message: 'wrong credentials',
              remoteAddress: '192.0.2.7',
              // Control and bidi characters (as a hand-edited status might hold them) are shown escaped.
              userAgent: 'curl/8.0 \u202eURGENT\x1b[2J',
            },
            {
              time: ago(60),
              status: 422,
              code: 'INTAKE_MAPPING_FAILED',
              reason: 'mapping',
              message: 'alerts must be a non-empty array',
              remoteAddress: '192.0.2.8',
              userAgent: 'Alertmanager/0.28',
              deadLetterId: 'dl-123',
            },
          ],
          unauthenticatedSenders: [
            {
              remoteAddress: '203.0.113.9',
              reason: 'signature_invalid',
              status: 401,
              code: 'UNAUTHORIZED',
              count: 37,
              firstTime: ago(600),
              lastTime: ago(7),
            },
          ],
          updatedTime: ago(2),
        },
      },
    };
    const stream = [
      `event: snapshot\ndata: ${JSON.stringify({ plural: 'webhookintegrations', items: [demo] })}\n\n`,
      `event: snapshot\ndata: ${JSON.stringify({ plural: 'apikeys', items: [] })}\n\n`,
    ].join('');
    const p = await context.newPage();
    await p.route('**/api/namespaces/activity-demo/live', (route) =>
      route.fulfill({ status: 200, contentType: 'text/event-stream', body: stream }),
    );
    await p.goto(`${localConsole.base}/#/ns/activity-demo`);
    const row = p.locator('tr[data-name="demo"]');
    await row.waitFor();
    expect(await row.locator('.last-event').textContent()).toMatch(/^\d+ s ago$/);
    expect(await row.locator('.refused').textContent()).toBe('3');
    await p.goto(`${localConsole.base}/#/ns/activity-demo/webhookintegrations/demo`);
    await p.locator('.activity .events-1h').waitFor();
    expect(await p.locator('.activity .events-1h').textContent()).toBe('42');
    expect(await p.locator('.activity .refused-1h').textContent()).toBe('3 (unauthorized: 2, mapping: 1)');
    // The chart: one bar per minute with anything, in its minute; the quiet minute between has none.
    const bars = p.locator('.activity-chart .minute');
    expect(await bars.count()).toBe(3);
    expect(
      await bars.evaluateAll((gs) => gs.map((g) => [g.dataset.minute, g.dataset.events, g.dataset.refused])),
    ).toEqual([
      [minuteAgo(20), '12', '0'],
      [minuteAgo(19), '0', '2'],
      [minuteAgo(18), '30', '1'],
    ]);
    expect(await p.locator('.activity-chart svg').getAttribute('aria-label')).toMatch(
      /^Last hour: 42 events \(most at \d\d:\d\d UTC: 30\), 3 refused$/,
    );
    const rows = p.locator('table.refusals tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).locator('.reason').textContent()).toBe('unauthorized');
    expect(await rows.nth(0).locator('.sender').textContent()).toBe('192.0.2.7');
    expect(await rows.nth(0).locator('.message').textContent()).toBe('INTAKE_UNAUTHORIZED: wrong credentials');
    expect(await rows.nth(1).textContent()).toContain('dl-123');
    // The User-Agent is the sender's claim, quoted, and inert.
    expect(await p.locator('table.refusals thead').textContent()).toContain('User-Agent (as sent)');
    expect(await rows.nth(0).locator('.user-agent').textContent()).toBe('“curl/8.0 \\u202eURGENT\\x1b[2J”');
    // Senders refused before authentication: apart, an address and a count.
    const senders = p.locator('table.unauthenticated tbody tr');
    expect(await senders.count()).toBe(1);
    expect(await senders.nth(0).textContent()).toMatch(/401signature_invalid203\.0\.113\.937\d+ min ago/);
    await screenshot(p, '10-activity-rendering');
    await p.close();
  });

  it('creates an API key and reveals the key', async () => {
    await openNamespace(page, teamA);
    await page.getByRole('link', { name: 'New API key' }).click();
    await page.locator('#f-name').fill('metrics');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/apikeys\/metrics$/);
    await page.locator('h1 .badge.ok').waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Reveal' }).click();
    const key = await secretValue(teamA, 'intake-apikey-metrics', 'apiKey');
    await page.locator('.secret-value', { hasText: key }).waitFor();
    expect(await page.locator('.secret-value').textContent()).toBe(key);
    expect(await page.locator('.url-value').textContent()).toBe(`${ingester.url}/v1/integrations/metrics`);
  });
});

describe('6. intake console refuses requests without its token, with a foreign Host, and cross-site writes', () => {
  it('refuses a request without the token, and the token a second time', async () => {
    const page = await raw(localConsole.port, '/', { host: `127.0.0.1:${localConsole.port}` });
    expect(page.status).toBe(401);
    const apiCall = await raw(localConsole.port, `/api/namespaces/${teamA}/webhookintegrations/checkout`, {
      host: `127.0.0.1:${localConsole.port}`,
    });
    expect(apiCall.status).toBe(401);
    expect(JSON.parse(apiCall.body)).toMatchObject({ error: 'no_token' });
    // The browser in beforeAll used the printed URL; it does not work again.
    const again = await raw(localConsole.port, new URL(localConsole.url).pathname + new URL(localConsole.url).search, {
      host: `127.0.0.1:${localConsole.port}`,
    });
    expect(again.status).toBe(401);
    expect(again.body).toContain('already used');
  });

  it('refuses a foreign Host header even with a valid session (DNS rebinding)', async () => {
    const session = await browserSession();
    const own = await raw(localConsole.port, `/api/namespaces/${teamA}/webhookintegrations/checkout`, {
      host: `localhost:${localConsole.port}`,
      ...session,
    });
    expect(own.status).toBe(200);
    const foreign = await raw(localConsole.port, `/api/namespaces/${teamA}/webhookintegrations/checkout`, {
      host: `rebind.attacker.example:${localConsole.port}`,
      ...session,
    });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toMatchObject({ error: 'host_not_allowed' });
    const otherPort = await raw(localConsole.port, '/', { host: '127.0.0.1:1', ...session });
    expect(otherPort.status).toBe(403);
  });

  it('a session cookie alone (what every other server on 127.0.0.1 gets from the browser) authorizes nothing', async () => {
    // Another server on loopback, another port, that the user visits in the same browser.
    const received: string[] = [];
    const other = createServer((req, res) => {
      received.push(String(req.headers.cookie ?? ''));
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>another local server</body></html>');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as AddressInfo).port;
    const p = await context.newPage();
    try {
      await p.goto(`http://127.0.0.1:${otherPort}/`);
      // Browsers do not isolate cookies by port: it got the console's cookie...
      const stolen = received.join('; ');
      expect(stolen).toMatch(/intake_console/);
      // ... but not the session secret, which only the console's origin can read.
      expect(await p.evaluate(() => sessionStorage.getItem('intake-console-session'))).toBeNull();
      // Replayed with the console's own Host, the cookie gets nothing: no read, no write, no live list.
      const host = `127.0.0.1:${localConsole.port}`;
      const path = `/api/namespaces/${teamA}/webhookintegrations/checkout`;
      for (const [method, target, body] of [
        ['GET', path, undefined],
        ['GET', `${path}/credentials`, undefined],
        ['GET', `/api/namespaces/${teamA}/live`, undefined],
        ['PATCH', path, JSON.stringify({ spec: { suspend: true } })],
        ['POST', `${path}/send`, JSON.stringify({ payload: '{"source":"x","severity":1}' })],
      ] as const) {
        const replay = await raw(
          localConsole.port,
          target,
          { host, cookie: stolen, ...(body ? { 'content-type': 'application/json' } : {}) },
          method,
          body,
        );
        expect({ method, target, status: replay.status }).toEqual({ method, target, status: 401 });
      }
      const session = JSON.parse((await raw(localConsole.port, '/api/session', { host, cookie: stolen })).body) as {
        signedIn?: boolean;
      };
      expect(session.signedIn).not.toBe(true);
      // Nor does the secret with another cookie, or the secret alone.
      const { 'x-intake-session': secret } = await browserSession();
      const wrongCookie = await raw(localConsole.port, path, {
        host,
        cookie: `intake_console_${localConsole.port}=x`,
        'x-intake-session': secret,
      });
      expect(wrongCookie.status).toBe(401);
      const secretAlone = await raw(localConsole.port, path, { host, 'x-intake-session': secret });
      expect(secretAlone.status).toBe(401);
      expect(
        (await kubectl(['get', 'webhookintegration', '-n', teamA, 'checkout', '-o', 'jsonpath={.spec.suspend}']))
          .stdout,
      ).toBe('false');
    } finally {
      await p.close();
      await new Promise((r) => other.close(r));
    }
  });

  it('two consoles in one browser keep their own sessions (the cookie name carries the port)', async () => {
    const second = await startConsole();
    const p = await context.newPage();
    try {
      await p.goto(second.url);
      await p.waitForURL(/#\/ns\//);
      await p.locator('h2#h-webhookintegrations').waitFor();
      // The first console, reloaded in the same browser, still has its session.
      await page.goto(`${localConsole.base}/#/ns/${teamA}`);
      await page.reload();
      await page.locator('tr[data-name="checkout"]').waitFor();
      expect(await page.locator('.live-dot').textContent()).toBe('live');
      const names = (await context.cookies()).map((c) => c.name).sort();
      expect(names).toEqual(
        expect.arrayContaining([`intake_console_${localConsole.port}`, `intake_console_${second.port}`]),
      );
      // A new tab of the first console gets the session from its open tab (same origin only).
      const tab = await context.newPage();
      await tab.goto(`${localConsole.base}/#/ns/${teamA}`);
      await tab.locator('tr[data-name="checkout"]').waitFor();
      await tab.close();
    } finally {
      await p.close();
      await second.stop();
    }
  });

  it('refuses writes from another origin or as a form post (CSRF), with a valid session', async () => {
    const { cookie, 'x-intake-session': secret } = await browserSession();
    const host = `127.0.0.1:${localConsole.port}`;
    const path = `/api/namespaces/${teamA}/webhookintegrations/checkout`;
    const patch = JSON.stringify({ spec: { suspend: true } });
    const crossOrigin = await raw(
      localConsole.port,
      path,
      { host, cookie, 'x-intake-session': secret, origin: 'http://evil.example', 'content-type': 'application/json' },
      'PATCH',
      patch,
    );
    expect(crossOrigin.status).toBe(403);
    expect(JSON.parse(crossOrigin.body)).toMatchObject({ error: 'cross_site_request' });
    const crossSite = await raw(
      localConsole.port,
      path,
      { host, cookie, 'x-intake-session': secret, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
      'PATCH',
      patch,
    );
    expect(crossSite.status).toBe(403);
    const formPost = await raw(
      localConsole.port,
      `/api/namespaces/${teamA}/webhookintegrations`,
      { host, cookie, 'x-intake-session': secret, 'content-type': 'application/x-www-form-urlencoded' },
      'POST',
      'metadata=x',
    );
    expect(formPost.status).toBe(403);
    // A page on another origin: its fetch carries no session (no secret: it cannot read the console's
    // storage; no cookie: SameSite=Strict), and its preflight is never approved.
    const evil = await context.newPage();
    await evil.route('http://evil.example/', (route) =>
      route.fulfill({ contentType: 'text/html', body: '<html><body>evil</body></html>' }),
    );
    await evil.goto('http://evil.example/');
    const outcome = await evil.evaluate(
      async ([url, body]) => {
        try {
          const res = await fetch(url as string, {
            method: 'PATCH',
            credentials: 'include',
            headers: { 'content-type': 'application/json' },
            body: body as string,
          });
          return `status ${res.status}`;
        } catch (err) {
          return `blocked: ${(err as Error).message}`;
        }
      },
      [`http://127.0.0.1:${localConsole.port}${path}`, patch],
    );
    expect(outcome).toMatch(/^blocked/);
    await evil.close();
    // Not suspended: spec.suspend absent, which the CRD defaults to false.
    expect(
      (await kubectl(['get', 'webhookintegration', '-n', teamA, 'checkout', '-o', 'jsonpath={.spec.suspend}'])).stdout,
    ).toBe('false');
    // The page's own header: a strict Content-Security-Policy.
    const index = await raw(localConsole.port, '/', { host, cookie });
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.headers['content-security-policy']).not.toContain('unsafe-inline');
  });
});

describe('bounds', () => {
  it('follows a bounded number of live lists at once (each holds two watches), and frees a place when a page closes', async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(KUBECONFIG);
    const running = await startConsoleServer({
      kubeConfig,
      mode: 'kubeconfig',
      host: '127.0.0.1',
      port: 0,
      maxLiveStreams: 1,
      webDir: resolve(ROOT, 'dist/console/web'),
      logger: pino({ level: 'silent' }),
    });
    try {
      const session = await signInLocal(running.url);
      const live = `http://127.0.0.1:${running.port}/api/namespaces/${teamA}/live`;
      const first = new AbortController();
      const open = await fetch(live, { headers: session, signal: first.signal });
      expect(open.status).toBe(200);
      expect(open.headers.get('content-type')).toContain('text/event-stream');
      const refused = await fetch(live, { headers: session });
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ error: 'too_many_streams' });
      first.abort();
      const again = await waitFor(
        'a free place',
        async () => {
          const res = await fetch(live, { headers: session, signal: AbortSignal.timeout(2000) });
          if (res.status === 200) return res;
          await res.arrayBuffer();
          return undefined;
        },
        10_000,
        100,
      );
      expect(again.status).toBe(200);
      await again.body?.cancel();
    } finally {
      await running.close();
    }
  });
});

describe('3. token mode: every Kubernetes call is made with the user’s own token', () => {
  let editorToken: string;
  let viewerToken: string;

  beforeAll(async () => {
    // The chart's aggregated roles, as helm renders them.
    const rendered = await new Promise<string>((resolvePromise, reject) => {
      import('node:child_process').then(({ execFile }) =>
        execFile(
          resolve(ROOT, '.tools/bin/helm'),
          ['template', 'intake', resolve(ROOT, 'charts/intake')],
          { maxBuffer: 16 << 20 },
          (err, stdout) => (err ? reject(err) : resolvePromise(stdout)),
        ),
      );
    });
    const roles = parseAllDocuments(rendered)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null)
      .filter((d) => d?.kind === 'ClusterRole' && ['intake-edit', 'intake-view'].includes(d.metadata?.name ?? ''));
    expect(roles).toHaveLength(2);
    await apply(roles.map((r) => stringifyYaml(r)).join('---\n'));
    // A namespace editor has the built-in edit role, a viewer view. Those are aggregated ClusterRoles;
    // the test API server runs no aggregation controller, so they are empty here: the test binds what
    // they aggregate instead (Kubernetes' system:aggregate-to-edit/view, and the chart's intake-edit/view).
    await apply(`apiVersion: v1
kind: ServiceAccount
metadata: {name: editor, namespace: ${teamA}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: viewer, namespace: ${teamA}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editor-intake, namespace: ${teamA}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: intake-edit}
subjects: [{kind: ServiceAccount, name: editor, namespace: ${teamA}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editor-edit, namespace: ${teamA}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:aggregate-to-edit'}
subjects: [{kind: ServiceAccount, name: editor, namespace: ${teamA}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer-intake, namespace: ${teamA}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: intake-view}
subjects: [{kind: ServiceAccount, name: viewer, namespace: ${teamA}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer-view, namespace: ${teamA}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:aggregate-to-view'}
subjects: [{kind: ServiceAccount, name: viewer, namespace: ${teamA}}]
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: b-only, namespace: ${teamB}}
spec: {}
`);
    const token = async (sa: string) => {
      const r = await kubectl(['create', 'token', sa, '-n', teamA, '--duration', '1h']);
      if (r.code !== 0) throw new Error(r.stderr);
      return r.stdout.trim();
    };
    editorToken = await token('editor');
    viewerToken = await token('viewer');
  });

  async function signIn(token: string): Promise<{ ctx: BrowserContext; p: Page }> {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const p = await ctx.newPage();
    await p.goto(tokenConsole.base);
    await p.locator('#token').fill(token);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(/#\/ns\//);
    return { ctx, p };
  }

  it('a token bound to intake-edit in A sees A’s integrations and none of B’s, and may reveal', async () => {
    const { ctx, p } = await signIn(editorToken);
    await p.goto(`${tokenConsole.base}/#/ns/${teamA}`);
    await p.locator('tr[data-name="checkout"]').waitFor();
    expect(await p.locator('.top .user').textContent()).toContain(`system:serviceaccount:${teamA}:editor`);
    await screenshot(p, '08-token-mode-list');
    await p.goto(`${tokenConsole.base}/#/ns/${teamB}`);
    const error = p.locator('section[aria-labelledby="h-webhookintegrations"] .error');
    await error.waitFor();
    expect(await error.textContent()).toContain('cannot list resource "webhookintegrations"');
    expect(await p.locator('tr[data-name="b-only"]').count()).toBe(0);
    await p.goto(`${tokenConsole.base}/#/ns/${teamA}/webhookintegrations/checkout`);
    await p.getByRole('button', { name: 'Reveal' }).click();
    const password = await secretValue(teamA, 'intake-webhook-checkout', 'password');
    await p.locator('.secret-value', { hasText: password }).waitFor();
    expect(await p.locator('.secret-value').textContent()).toBe(password);
    await ctx.close();
  });

  it('a token bound to intake-view cannot reveal the password (clear message) nor delete', async () => {
    const { ctx, p } = await signIn(viewerToken);
    await p.goto(`${tokenConsole.base}/#/ns/${teamA}/webhookintegrations/checkout`);
    await p.locator('h1 .badge.ok').waitFor();
    await p.getByRole('button', { name: 'Reveal' }).click();
    const revealError = p.locator('section[aria-labelledby="h-connection"] .error');
    await revealError.waitFor();
    expect(await revealError.textContent()).toContain(
      `your Kubernetes identity may not get the Secret ${teamA}/intake-webhook-checkout`,
    );
    expect(await p.locator('.secret-value').textContent()).toBe('••••••••••••');
    await p.getByRole('button', { name: 'Delete' }).click();
    await p.getByRole('button', { name: 'Really delete checkout' }).click();
    const deleteError = p.locator('section[aria-labelledby="h-actions"] .error');
    await deleteError.waitFor();
    expect(await deleteError.textContent()).toContain('cannot delete resource "webhookintegrations"');
    await screenshot(p, '09-token-mode-viewer');
    expect((await kubectl(['get', 'webhookintegration', '-n', teamA, 'checkout'])).code).toBe(0);
    await ctx.close();
  });

  it('takes the token an authenticating proxy puts in Authorization, and refuses a bad token', async () => {
    const host = `127.0.0.1:${tokenConsole.port}`;
    const a = await raw(tokenConsole.port, `/api/namespaces/${teamA}/webhookintegrations/checkout`, {
      host,
      authorization: `Bearer ${viewerToken}`,
    });
    expect(a.status).toBe(200);
    const b = await raw(tokenConsole.port, `/api/namespaces/${teamB}/webhookintegrations/b-only`, {
      host,
      authorization: `Bearer ${viewerToken}`,
    });
    expect(b.status).toBe(403);
    expect(JSON.parse(b.body).message).toContain('cannot get resource "webhookintegrations"');
    const none = await raw(tokenConsole.port, `/api/namespaces/${teamA}/webhookintegrations/checkout`, { host });
    expect(none.status).toBe(401);
    const bad = await raw(
      tokenConsole.port,
      '/api/login',
      { host, 'content-type': 'application/json' },
      'POST',
      JSON.stringify({ token: 'not-a-token' }),
    );
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.body)).toMatchObject({ error: 'token_refused' });
  });
});

/**
 * The ingesters count, the operator merges their reports into status.activity every second here
 * (--activity-interval 1s) and kubectl shows the `Last Event` printer column.
 */
const ACTIVITY_WAIT_MS = 45_000;

describe('2 (continued). activity written by the operator', () => {
  it('shows Last Event in the console and in kubectl get, and a wrong password apart, as the sender address and a count', async () => {
    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/checkout`);
    const sentFrom = Math.floor(Date.now() / 60_000);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.answer .http-status', { hasText: '200' }).waitFor();
    const sentBy = Math.floor(Date.now() / 60_000);
    await page.locator('.activity .last-event', { hasNotText: 'never' }).waitFor({ timeout: ACTIVITY_WAIT_MS });
    // The chart has a bar in the minute the event was sent in (the minute may have turned meanwhile).
    const sentIn = [...new Set([sentFrom, sentBy])].map((m) => `[data-minute="${new Date(m * 60_000).toISOString()}"]`);
    const bar = page.locator(`.activity-chart .minute:is(${sentIn.join(', ')})`).first();
    await bar.waitFor({ timeout: ACTIVITY_WAIT_MS });
    expect(Number(await bar.getAttribute('data-events'))).toBeGreaterThanOrEqual(1);
    expect(await page.locator('.activity-chart svg').getAttribute('aria-label')).toMatch(/^Last hour: [1-9]\d* events/);
    expect(await page.locator('.activity .last-event').textContent()).toMatch(/ago/);
    expect(Number(await page.locator('.activity .events-1h').textContent())).toBeGreaterThanOrEqual(1);

    // kubectl get: the Last Event column has an age for this integration.
    const lastEventColumn = async () => {
      const table = (await kubectl(['get', 'webhookintegrations', '-n', teamA])).stdout.split('\n');
      const at = table[0]?.indexOf('LAST EVENT') ?? -1;
      const row = table.find((line) => line.startsWith('checkout '));
      return at >= 0 && row ? row.slice(at).split(/\s{2,}/)[0] : undefined;
    };
    const age = await waitFor(
      'Last Event in kubectl get',
      async () => {
        const v = await lastEventColumn();
        return v && v !== '<none>' ? v : undefined;
      },
      ACTIVITY_WAIT_MS,
      1000,
    );
    expect(age).toMatch(/^\d+[smhd]/);

    // And in the list page.
    await openNamespace(page, teamA);
    await page.locator('tr[data-name="checkout"] .last-event', { hasText: 'ago' }).waitFor();
    expect(await page.locator('tr[data-name="checkout"] .chart svg').getAttribute('aria-label')).toMatch(
      /^Last hour: [1-9]\d* events/,
    );
    await screenshotForDocs(page, 'list');

    // A wrong password sent by curl: refused, and shown as such with the sender's address.
    const curl = await new Promise<string>((resolvePromise, reject) =>
      execFile(
        'curl',
        [
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          '-u',
          'checkout:wrong-password',
          '-H',
          'Content-Type: application/json',
          '-d',
          '{"source":"x","severity":1}',
          `${ingester.url}/events/webhook_checkout`,
        ],
        (err, stdout) => (err ? reject(err) : resolvePromise(stdout)),
      ),
    );
    expect(curl).toBe('401');
    await page.goto(`${localConsole.base}/#/ns/${teamA}/webhookintegrations/checkout`);
    // A wrong password proved no credentials: it is listed apart, as an address and a count,
    // never with the sender's User-Agent or among the tenant's own refusals.
    const row = page.locator('table.unauthenticated tbody tr').first();
    await row.waitFor({ timeout: ACTIVITY_WAIT_MS });
    expect(await row.locator('.reason').textContent()).toBe('unauthorized');
    expect(await row.locator('.sender').textContent()).toMatch(/127\.0\.0\.1/);
    expect(await row.textContent()).not.toContain('curl/');
    expect(await page.locator('table.refusals tbody tr').count()).toBe(0);
    expect(await page.locator('.activity .refused-1h').textContent()).toMatch(/unauthorized: \d+/);
    // The refusal is in the chart too, below the line.
    await page.locator('.activity-chart .minute:not([data-refused="0"])').first().waitFor();
    await screenshot(page, '10-activity');
    await screenshotForDocs(page, 'detail', { through: page.locator('section[aria-labelledby="h-activity"]') });
  });
});

describe('Benchmark: the console lists 1,000 integrations', () => {
  it('renders the first 1,000-row list (measured, reported, not a timed assertion)', async () => {
    const bench = uniqueName('team-bench');
    await createNamespace(bench);
    const items = Array.from({ length: 1000 }, (_, i) => ({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      metadata: { name: `integration-${String(i).padStart(4, '0')}`, namespace: bench },
      spec: {},
    }));
    const created = await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    expect(created.code).toBe(0);
    const p = await context.newPage();
    const started = Date.now();
    await p.goto(`${localConsole.base}/#/ns/${bench}`);
    await p.locator('tr[data-name="integration-0999"]').waitFor({ timeout: 60_000 });
    const firstRenderMs = Date.now() - started;
    const rows = await p.locator('table[data-plural="webhookintegrations"] tbody tr').count();
    expect(rows).toBe(1000);
    const renderedAt = Number(
      await p.locator('table[data-plural="webhookintegrations"]').getAttribute('data-rendered-ms'),
    );
    const snapshotAt = await p.evaluate(
      () => performance.getEntriesByName('intake:snapshot:webhookintegrations')[0]?.startTime ?? -1,
    );
    // From navigation: the page's own clock says when the list arrived and when it was on screen.
    const result = {
      integrations: 1000,
      firstRenderMs,
      listArrivedAtMs: Math.round(snapshotAt),
      renderedAtMs: renderedAt,
      renderMs: Math.round(renderedAt - snapshotAt),
    };
    writeFileSync(resolve(SCREENSHOTS, 'bench-1000.json'), JSON.stringify(result, null, 2));
    process.stdout.write(`console benchmark: ${JSON.stringify(result)}\n`);
    await p.screenshot({ path: resolve(SCREENSHOTS, '11-list-1000.png') });
    await p.close();
    await kubectl(['delete', 'namespace', bench, '--wait=false']);
  });
});
