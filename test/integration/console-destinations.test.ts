/**
 * The console's destination pages through the real path: a real kube-apiserver, the built
 * operator and an ingester in Kubernetes mode delivering a team's `Destination` (and a platform
 * destination), the built `intake console --auth token` in front of them, and Debian's chromium.
 * Two users of the namespace: one bound to the chart's intake-edit ClusterRole (patch on
 * destinations, the verb replay), the other to intake-view.
 *
 * status.delivery is written here through the status subresource, as the operator writes what the
 * ingesters report: the page shows its minutes. The dead letters are real: the receiver refuses
 * the events, the ingester keeps them, and a filtered bulk replay started from the page hands them
 * back to the (then accepting) receiver, with its progress, and a second one is cancelled half-way.
 * Screenshots of each page go to docs/images/console-destination*.png.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setHeaderOptions } from '@kubernetes/client-node';
import type { Browser, Page } from 'playwright-core';
import { jest } from '@jest/globals';
import { apply, postEvent, webhookReady, type Proc } from './support/cluster.js';
import { operatorSuite } from './support/suite.js';
import { startTeamDeliveryPath } from './support/team-destinations.js';
import { consoleSession, deleteTenantRoles, viewerAndEditor } from './support/tenant-users.js';
import { launchBrowser, screenshotForDocs, startConsole, type ConsoleProc } from './support/console.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../e2e/support/event-receiver.js';

jest.setTimeout(180_000);

const suite = operatorSuite('dest-pages');
const { custom, core } = suite;
const [ns] = suite.tenants;
const release = `dp${Math.random().toString(36).slice(2, 6)}`;
const dir = mkdtempSync(join(tmpdir(), 'intake-it-console-dest-'));
const MERGE_PATCH = setHeaderOptions('Content-Type', 'application/merge-patch+json');
let ingester: Proc;
let receiver: EventReceiver;
let platformReceiver: EventReceiver;
let consoleProc: ConsoleProc;
let browser: Browser;
let viewerToken: string;
let editorToken: string;
const authorizations = new Map<string, string>();

const destination = async (name: string) =>
  (await custom.getNamespacedCustomObject({
    group: 'intake.dev',
    version: 'v1alpha1',
    namespace: ns,
    plural: 'destinations',
    name,
  })) as { spec: { suspend?: boolean }; status?: { conditions?: Array<{ type: string; status: string }> } };

const adminLetters = async (filter = ''): Promise<Array<{ id: string; integration: string; reason: string }>> => {
  const res = await fetch(`${ingester.adminUrl}/deadletter?kind=delivery&namespace=${ns}${filter}`);
  return ((await res.json()) as { entries: Array<{ id: string; integration: string; reason: string }> }).entries;
};

/** Posts `count` events with sources `<tag>-<i>` through integration `name`. */
async function send(name: string, tag: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${ingester.url}/events/webhook_${name}`, {
      method: 'POST',
      headers: { authorization: authorizations.get(name) ?? '', 'content-type': 'application/json' },
      body: JSON.stringify({ source: `${tag}-${i}`, severity: 'critical' }),
    });
    expect(res.status).toBe(200);
  }
}

/** The minute two minutes ago, whole, and the counts written for it. */
const MINUTE = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 2 * 60_000).toISOString();

beforeAll(async () => {
  receiver = await startEventReceiver();
  platformReceiver = await startEventReceiver();
  ({ viewerToken, editorToken } = await viewerAndEditor(release, ns));

  ingester = await startTeamDeliveryPath(suite, dir, { name: 'tickets', url: platformReceiver.url });
  await apply(`apiVersion: intake.dev/v1alpha1
kind: Destination
metadata: {name: hook, namespace: ${ns}}
spec:
  http: {url: '${receiver.url}'}
  delivery: {maxAttempts: 1}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: alerts, namespace: ${ns}}
spec: {destinations: [hook]}
---
apiVersion: intake.dev/v1alpha1
kind: WebhookIntegration
metadata: {name: builds, namespace: ${ns}}
spec: {destinations: [hook]}
`);
  for (const name of ['alerts', 'builds']) {
    await waitFor(`${name} Ready`, async () => (await webhookReady(ns, name))?.status === 'True', 20_000);
    const secret = await waitFor(
      'credentials',
      () => core.readNamespacedSecret({ namespace: ns, name: `intake-webhook-${name}` }).catch(() => undefined),
      10_000,
    );
    authorizations.set(name, Buffer.from(secret.data?.authorization ?? '', 'base64').toString('utf8'));
  }
  // One event through, once the route is served (each try that answers 200 is one event): then
  // nothing of the warm-up is left in flight when the receiver starts refusing.
  await waitFor(
    'route served',
    async () =>
      (await postEvent(ingester.url, 'alerts', authorizations.get('alerts') ?? '')) === 200 ? true : undefined,
    20_000,
  );
  await waitFor('warm-up delivered', async () => (receiver.requests.length > 0 ? true : undefined), 20_000);
  // From now on the receiver refuses: every event becomes a dead letter (one attempt).
  receiver.refuse = () => true;
  await send('alerts', 'alerts', 3);
  await send('builds', 'builds', 2);
  await waitFor('five dead letters', async () => ((await adminLetters()).length === 5 ? true : undefined), 20_000);

  // What the operator writes from the ingesters' reports, written here through the status subresource.
  await custom.patchNamespacedCustomObjectStatus(
    {
      group: 'intake.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'destinations',
      name: 'hook',
      body: {
        status: {
          delivery: {
            lastSuccess: { time: new Date(Date.now() - 120_000).toISOString(), statusCode: 200 },
            lastFailure: {
              time: new Date().toISOString(),
              statusCode: 400,
              excerpt: '{"error":"field source is not accepted here"}',
            },
            deliveredLastHour: 7,
            failedLastHour: 7,
            deadLetteredLastHour: 5,
            backlog: 3,
            oldestPendingAge: '42s',
            updatedTime: new Date().toISOString(),
            minutes: { start: MINUTE, delivered: [7, 0, 0], failed: [2, 0, 5] },
          },
        },
      },
    },
    MERGE_PATCH,
  );
  consoleProc = await startConsole(['--auth', 'token', '--ingester-admin-url', ingester.adminUrl]);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await consoleProc?.stop();
  await receiver?.close();
  await platformReceiver?.close();
  await deleteTenantRoles(release);
  rmSync(dir, { recursive: true, force: true });
});

const signIn = (kubeToken: string) => consoleSession(consoleProc.base, kubeToken);

const call = async (session: Record<string, string>, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${consoleProc.base}/api/namespaces/${ns}${path}`, {
    method,
    headers: { ...session, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

async function pageAs(kubeToken: string, hash: string, before?: (p: Page) => void) {
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 900 }, timezoneId: 'UTC' });
  const p = await ctx.newPage();
  await p.goto(consoleProc.base);
  await p.locator('#token').fill(kubeToken);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.waitForURL(/#\/ns\//);
  before?.(p);
  await p.goto(`${consoleProc.base}/#/ns/${ns}/${hash}`);
  return { ctx, p };
}

describe('the destinations list', () => {
  it("shows the namespace's Destination with its state and last hour, and the platform's destinations", async () => {
    const asked: string[] = [];
    const { ctx, p } = await pageAs(viewerToken, 'destinations', (page) =>
      page.on('request', (r) => asked.push(new URL(r.url()).pathname)),
    );
    const row = p.locator('table[data-kind="destinations"] tr[data-name="hook"]');
    await row.waitFor();
    expect(await row.locator('td.url').textContent()).toBe(receiver.url);
    expect(await row.locator('td.backlog').textContent()).toBe('3 (oldest 42s)');
    expect(await row.locator('svg.minute-chart').getAttribute('aria-label')).toContain('7 delivered');
    const platform = p.locator('table[data-kind="platform-destinations"] tr[data-name="tickets"]');
    await platform.waitFor();
    expect(await platform.textContent()).toContain('http');
    // One request for the whole list: nothing per destination or per integration.
    expect([...new Set(asked.filter((u) => u.startsWith('/api/') && !u.endsWith('/live')))]).toEqual([
      `/api/namespaces/${ns}/destinations`,
    ]);
    await screenshotForDocs(p, 'destinations');
    await ctx.close();
  });
});

describe('a destination page', () => {
  it("shows the minute's counts, backlog, oldest pending and the receiver's last answer", async () => {
    const { ctx, p } = await pageAs(editorToken, 'destinations/hook');
    const minute = p.locator(`svg.minute-chart g.minute[data-minute="${MINUTE}"]`);
    await minute.waitFor();
    expect(await minute.getAttribute('data-events')).toBe('7');
    expect(await minute.getAttribute('data-refused')).toBe('2');
    expect(await p.locator('dd.backlog').textContent()).toBe('3');
    expect(await p.locator('dd.oldest-pending').textContent()).toBe('42s');
    expect(await p.locator('dd.last-failure').textContent()).toContain('HTTP 400');
    expect(await p.locator('dd.last-failure pre').textContent()).toBe('{"error":"field source is not accepted here"}');
    await ctx.close();
  });

  it('pauses and resumes: spec.suspend set as the user, and the page shows Paused', async () => {
    const { ctx, p } = await pageAs(editorToken, 'destinations/hook');
    await p.getByRole('button', { name: 'Pause' }).click();
    await p.getByRole('button', { name: 'Resume' }).waitFor();
    expect((await destination('hook')).spec.suspend).toBe(true);
    expect(await p.locator('h1 .badge.paused').textContent()).toContain('Paused');
    // The operator's Paused condition follows, and the page reads it.
    await p.locator('table.conditions tr[data-type="Paused"] td:nth-child(2)', { hasText: 'True' }).waitFor({
      timeout: 30_000,
    });
    await screenshotForDocs(p, 'destination-paused', { through: p.locator('table.conditions') });
    await p.getByRole('button', { name: 'Resume' }).click();
    await p.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await destination('hook')).spec.suspend).toBe(false);
    await p.locator('h1 .badge.paused').waitFor({ state: 'detached' });
    // The ingesters' own view of it, where Resume looks for an auto-pause to end: found by the name
    // the console uses, and resumed once the operator has published the change (seconds, not at once).
    const state = await waitFor(
      'the ingester to resume the destination',
      async () => {
        const r = await fetch(`${ingester.adminUrl}/destinations/${encodeURIComponent(`${ns}/hook`)}`);
        expect(r.status).toBe(200);
        const body = (await r.json()) as { name: string; paused: boolean };
        return body.paused ? undefined : body;
      },
      20_000,
      200,
    );
    expect(state).toMatchObject({ name: `${ns}/hook`, paused: false });
    await ctx.close();
  });

  it('replays the dead letters the filters select, shows the progress, and cancels a replay', async () => {
    receiver.refuse = () => false;
    const { ctx, p } = await pageAs(editorToken, 'destinations/hook');
    const rows = p.locator('table.letters tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(5);
    const reason = (await adminLetters())[0]?.reason ?? '';
    // Filters: the integration, the reason, and a time range around the letters.
    await p.locator('input[name="integration"]').fill('alerts');
    await p.locator('input[name="reason"]').fill(reason);
    await p.locator('input[name="since"]').fill(new Date(Date.now() - 10 * 60_000).toISOString().slice(0, 19));
    await p.locator('input[name="until"]').fill(new Date(Date.now() + 10 * 60_000).toISOString().slice(0, 19));
    await p.locator('input[name="rate"]').fill('4');
    await p.getByRole('button', { name: 'Show' }).click();
    await waitFor('three letters shown', async () => ((await rows.count()) === 3 ? true : undefined), 10_000);
    await p.getByRole('button', { name: 'Replay matching' }).click();
    const replay = p.locator('ul.replays li.replay').first();
    await replay.waitFor();
    await p.locator('ul.replays li.replay[data-state="done"]').waitFor({ timeout: 30_000 });
    expect(await replay.textContent()).toContain('3 replayed, 0 failed, 0 skipped, 0 remaining of 3');
    // The three of alerts were delivered; the two of builds are still dead letters.
    await waitFor(
      'alerts delivered',
      async () =>
        [0, 1, 2].every((i) => receiver.requests.some((r) => r.events.some((e) => e.source === `alerts-${i}`)))
          ? true
          : undefined,
      10_000,
    );
    expect((await adminLetters()).map((l) => l.integration)).toEqual(['builds', 'builds']);
    await screenshotForDocs(p, 'destination', { through: p.locator('section.dead-letters') });

    // A slow one (a letter every 5 s) of the builds' two, cancelled after the first.
    await p.locator('input[name="integration"]').fill('builds');
    await p.locator('input[name="rate"]').fill('0.2');
    await p.getByRole('button', { name: 'Show' }).click();
    await p.getByRole('button', { name: 'Replay matching' }).click();
    const running = p.locator('ul.replays li.replay[data-state="running"]');
    await running.waitFor();
    await running.getByRole('button', { name: 'Cancel' }).click();
    const cancelled = p.locator('ul.replays li.replay[data-state="cancelled"]');
    await cancelled.waitFor({ timeout: 15_000 });
    expect(await cancelled.textContent()).toMatch(/1 replayed, 0 failed, 0 skipped, 1 remaining of 2/);
    expect((await adminLetters()).length).toBe(1);
    await ctx.close();
  });

  it('shows a platform destination read-only, with its dead letters of this namespace', async () => {
    const { ctx, p } = await pageAs(editorToken, 'platform-destinations/tickets');
    await p.locator('dd.circuit').waitFor();
    expect(await p.locator('dd.paused').textContent()).toBe('no');
    expect(await p.getByRole('button', { name: 'Pause' }).count()).toBe(0);
    await p.locator('section.dead-letters p.empty').waitFor();
    await screenshotForDocs(p, 'destination-platform');
    await ctx.close();
  });
});

describe('a user without the permissions (the view role)', () => {
  it('reads the destination and its dead letters, but may neither pause nor replay nor cancel', async () => {
    const viewer = await signIn(viewerToken);
    expect((await call(viewer, 'GET', '/destinations/hook')).status).toBe(200);
    const pause = await call(viewer, 'POST', '/destinations/hook/pause', {});
    expect(pause.status).toBe(403);
    expect((await destination('hook')).spec.suspend).toBe(false);
    const letters = await call(viewer, 'GET', '/destinations/hook/deadletters');
    expect(letters.status).toBe(200);
    expect(letters.body.mayReplay).toBe(false);
    const replay = await call(viewer, 'POST', '/destinations/hook/replays', {});
    expect(replay.status).toBe(403);
    expect(replay.body.message).toContain('"replay"');
    const replays = (await call(viewer, 'GET', '/destinations/hook/replays')).body.replays as Array<{ id: string }>;
    expect(replays.length).toBeGreaterThan(0);
    expect((await call(viewer, 'POST', `/destinations/hook/replays/${replays[0]?.id}/cancel`, {})).status).toBe(403);
    expect((await adminLetters()).length).toBe(1);
  });

  it('sees the refusal on the page, and the replay button off', async () => {
    const { ctx, p } = await pageAs(viewerToken, 'destinations/hook');
    await p.locator('table.letters tbody tr').first().waitFor();
    expect(await p.getByRole('button', { name: 'Replay matching' }).isDisabled()).toBe(true);
    expect(await p.locator('section.dead-letters .forbidden').textContent()).toContain('replay');
    await p.getByRole('button', { name: 'Pause' }).click();
    await p.locator('section[aria-labelledby="h-destination"] .error').waitFor();
    expect(await p.locator('section[aria-labelledby="h-destination"] .error').textContent()).toMatch(/forbidden/i);
    expect((await destination('hook')).spec.suspend).toBe(false);
    await ctx.close();
  });

  it('cannot reach another namespace’s letters through a filter: the namespace and destination are the page’s', async () => {
    const editor = await signIn(editorToken);
    const refused = await call(editor, 'POST', '/destinations/hook/replays', { namespace: 'other', destination: 'x' });
    expect(refused.status).toBe(400);
    expect((await adminLetters()).length).toBe(1);
  });
});
