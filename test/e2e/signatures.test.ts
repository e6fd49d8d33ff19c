/**
 * Signed senders through the built ingester (standalone): requests signed by the senders' own
 * libraries (standardwebhooks, the specification's reference; @octokit/webhooks-methods, GitHub's)
 * are accepted; a tampered body, a stale timestamp, a rotated-out secret are refused exactly like a
 * wrong password; a repeated webhook-id is answered 200 and stored once, on one replica (its cache)
 * and across two (the events' ids, JetStream's duplicate window).
 */
import { createHmac } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import type { ActivityReport, ReportedActivity } from '../../api/activity.js';
import { eventId } from '../../ingester/core/event-id.js';
import { waitFor } from '../support/waiting.js';
import { basic, DEMO, eventLines, post, startIngester, type RunningIngester } from './support/ingester.js';
import { handoffConfig, readStream, startNats, type RunningNats } from './support/nats-server.js';

const SW_SECRET = 'whsec_' + Buffer.alloc(32, 1).toString('base64');
const SW_OLD_SECRET = 'whsec_' + Buffer.alloc(32, 2).toString('base64');
const OTHER_SECRET = 'whsec_' + Buffer.alloc(32, 9).toString('base64');
const GH_SECRET = 'a-github-webhook-secret';
const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
/** How long the rotated-out Standard Webhooks secret stays valid after the ingester starts. */
const GRACE_MS = 6000;

const signedRoute = (name: string, signature: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  name,
  namespace: 'team-s',
  credentials: [],
  authentication: { mode: 'signature', signature },
  ...extra,
});

function withSignedRoutes(graceEndsAt: Date) {
  return (c: Record<string, unknown>): void => {
    (c.routes as unknown[]).push(
      signedRoute('sw', {
        scheme: 'standard-webhooks',
        secrets: [{ value: SW_SECRET }, { value: SW_OLD_SECRET, notAfter: graceEndsAt.toISOString() }],
      }),
      signedRoute('gh', { scheme: 'github', secrets: [{ value: GH_SECRET }] }),
      signedRoute('slack', { scheme: 'slack', secrets: [{ value: SLACK_SECRET }] }),
      {
        ...signedRoute('both', { scheme: 'github', secrets: [{ value: GH_SECRET }] }),
        credentials: [{ username: 'both', secret: { plain: 'both-password' } }],
        authentication: { mode: 'basic+signature', signature: { scheme: 'github', secrets: [{ value: GH_SECRET }] } },
      },
    );
    c.authThrottle = { failures: 1000, window: '1m', block: '1m', failureDelay: '50ms' };
  };
}

/** A Standard Webhooks request as the reference library signs it. */
function standardWebhooks(secret: string, id: string, body: string, at = new Date()) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

/** A request as Slack signs it: HMAC-SHA256 of `v0:<timestamp>:<body>`, hex, after `v0=`. */
function slack(secret: string, body: string, at = new Date()) {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const hex = createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
  return { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': `v0=${hex}` };
}

async function authFailures(adminUrl: string, reason: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('intake_auth_failures_total{') && l.includes(`reason="${reason}"`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const eventsWith = (ing: RunningIngester, run: string) =>
  eventLines(ing.stdout()).filter((e) => (e.custom_info as Record<string, unknown> | undefined)?.run === run);

describe('standalone, signed integrations', () => {
  let ing: RunningIngester;
  let graceEndsAt: Date;
  beforeAll(async () => {
    graceEndsAt = new Date(Date.now() + GRACE_MS);
    ing = await startIngester(withSignedRoutes(graceEndsAt));
  });
  afterAll(async () => {
    await ing.stop();
  });
  const url = (name: string) => `${ing.url}/events/webhook_${name}`;

  it('accepts what the Standard Webhooks reference library signs', async () => {
    const body = JSON.stringify({ source: 'sw-01', severity: 3, run: 'sw-ok' });
    const res = await post(url('sw'), body, standardWebhooks(SW_SECRET, 'msg_ok', body));
    expect(res.status).toBe(200);
    await waitFor('event written', async () => eventsWith(ing, 'sw-ok').length === 1);
  });

  it('refuses a tampered body with the very 401 a wrong password gets, counted as signature_invalid', async () => {
    const before = await authFailures(ing.adminUrl, 'signature_invalid');
    const body = JSON.stringify({ source: 'sw-01', severity: 3, run: 'sw-tampered' });
    const headers = standardWebhooks(SW_SECRET, 'msg_tampered', body);
    const tampered = await post(url('sw'), body.replace('"severity":3', '"severity":5'), headers);
    const wrongPassword = await post(
      url('demo'),
      { source: 'x', severity: 1 },
      { authorization: basic('demo', 'nope') },
    );
    expect(tampered.status).toBe(401);
    expect(tampered.text).toBe(wrongPassword.text);
    expect(tampered.headers.get('www-authenticate')).toBe(wrongPassword.headers.get('www-authenticate'));
    expect(await authFailures(ing.adminUrl, 'signature_invalid')).toBe(before + 1);
    expect(eventsWith(ing, 'sw-tampered')).toEqual([]);
  });

  it('checks the signature before the body is parsed: bad JSON with a bad signature is 401, with a good one 400', async () => {
    const notJson = '{"source": ';
    const forged = await post(url('sw'), notJson, standardWebhooks(OTHER_SECRET, 'msg_bad', notJson));
    expect(forged.status).toBe(401);
    const signed = await post(url('sw'), notJson, standardWebhooks(SW_SECRET, 'msg_bad2', notJson));
    expect(signed.status).toBe(400);
    expect(signed.json()).toMatchObject({ code: 'INVALID_JSON' });
  });

  it('refuses a stale timestamp as timestamp_out_of_range, even correctly signed', async () => {
    const before = await authFailures(ing.adminUrl, 'timestamp_out_of_range');
    const body = JSON.stringify({ source: 'sw-01', severity: 3, run: 'sw-stale' });
    const tenMinutesAgo = new Date(Date.now() - 10 * 60_000);
    const res = await post(url('sw'), body, standardWebhooks(SW_SECRET, 'msg_stale', body, tenMinutesAgo));
    expect(res.status).toBe(401);
    expect(await authFailures(ing.adminUrl, 'timestamp_out_of_range')).toBe(before + 1);
    expect(eventsWith(ing, 'sw-stale')).toEqual([]);
  });

  it("records a tampered and a stale request in the integration's activity by reason, as the metric counts them", async () => {
    const activityOfSw = async (): Promise<ReportedActivity | undefined> => {
      const report = (await (await fetch(`${ing.adminUrl}/status/activity`)).json()) as ActivityReport;
      return report.webhookIntegrations.find((a) => a.name === 'sw');
    };
    const before = (await activityOfSw())?.refusedLastHour ?? 0;
    const body = JSON.stringify({ source: 'sw-01', severity: 3, run: 'sw-activity' });
    const tampered = standardWebhooks(SW_SECRET, 'msg_activity_tampered', body);
    expect((await post(url('sw'), body.replace('"severity":3', '"severity":5'), tampered)).status).toBe(401);
    const stale = standardWebhooks(SW_SECRET, 'msg_activity_stale', body, new Date(Date.now() - 10 * 60_000));
    expect((await post(url('sw'), body, stale)).status).toBe(401);
    // Recorded once each answer is sent (onResponse): a moment after the sender has it.
    const sw = await waitFor('refusals recorded', async () => {
      const got = await activityOfSw();
      return got && got.refusedLastHour >= before + 2 ? got : undefined;
    });
    // Refused before the signature held: kept apart from the integration's refusals, by address and reason.
    // (The clock is read every 250 ms: both may have the same time, so in either order.)
    expect(sw.unauthenticatedSenders).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ status: 401, code: 'UNAUTHORIZED', reason: 'timestamp_out_of_range' }),
        expect.objectContaining({ status: 401, code: 'UNAUTHORIZED', reason: 'signature_invalid' }),
      ]),
    );
    expect(sw.recentRefusals.filter((f) => f.status === 401)).toEqual([]);
    expect(sw.refusalsLastHour.signature_invalid).toBeGreaterThanOrEqual(1);
    expect(sw.refusalsLastHour.timestamp_out_of_range).toBeGreaterThanOrEqual(1);
    expect(sw.refusalsLastHour.unauthorized).toBeUndefined();
  });

  it('answers a repeated webhook-id 200 with the first answer, and stores it once', async () => {
    const body = JSON.stringify([
      { source: 'sw-02', severity: 2, run: 'sw-repeat' },
      { source: 'sw-03', severity: 4, run: 'sw-repeat' },
    ]);
    const headers = standardWebhooks(SW_SECRET, 'msg_repeated', body);
    const first = await post(url('sw'), body, headers);
    const again = await post(url('sw'), body, headers);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.json()).toEqual(first.json());
    await waitFor('events written', async () => eventsWith(ing, 'sw-repeat').length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(eventsWith(ing, 'sw-repeat')).toHaveLength(2);
    const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    expect(text).toMatch(/intake_signed_messages_repeated_total\{integration="sw",namespace="team-s"\} 1/);
  });

  it('names the events by the webhook-id (as an Idempotency-Key would), so a bus stores a repeat once', () => {
    const ids = eventsWith(ing, 'sw-repeat').map((e) => e.id);
    const byMessageId = [0, 1].map((i) =>
      eventId('team-s', 'sw', { kind: 'key', key: 'message-id msg_repeated' }, i, undefined),
    );
    expect(ids).toEqual(byMessageId);
  });

  it('accepts the rotated-out secret within the grace period, and refuses it after', async () => {
    const body = JSON.stringify({ source: 'sw-04', severity: 1, run: 'sw-rotation' });
    const within = await post(url('sw'), body, standardWebhooks(SW_OLD_SECRET, 'msg_old_1', body));
    expect(within.status).toBe(200);
    // The sender signs with both while it rolls over: accepted either way.
    const both = standardWebhooks(SW_SECRET, 'msg_both', body);
    both['webhook-signature'] += ` ${standardWebhooks(SW_OLD_SECRET, 'msg_both', body)['webhook-signature']}`;
    expect((await post(url('sw'), body, both)).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, graceEndsAt.getTime() - Date.now() + 200)));
    const after = await post(url('sw'), body, standardWebhooks(SW_OLD_SECRET, 'msg_old_2', body));
    expect(after.status).toBe(401);
    expect((await post(url('sw'), body, standardWebhooks(SW_SECRET, 'msg_new_2', body))).status).toBe(200);
  }, 30_000);

  it('accepts what @octokit/webhooks-methods signs, and refuses another secret or no signature', async () => {
    const body = JSON.stringify({ source: 'gh-01', severity: 2, run: 'gh' });
    const missingBefore = await authFailures(ing.adminUrl, 'signature_missing');
    expect((await post(url('gh'), body, { 'x-hub-signature-256': await octokitSign(GH_SECRET, body) })).status).toBe(
      200,
    );
    expect((await post(url('gh'), body, { 'x-hub-signature-256': await octokitSign('not-it', body) })).status).toBe(
      401,
    );
    expect((await post(url('gh'), body, {})).status).toBe(401);
    expect(await authFailures(ing.adminUrl, 'signature_missing')).toBe(missingBefore + 1);
  });

  it("answers Slack's url_verification with its challenge once the signature holds, storing nothing", async () => {
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
    const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' });
    const stored = eventLines(ing.stdout()).length;
    const res = await post(url('slack'), body, slack(SLACK_SECRET, body));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ challenge });
    const forged = await post(url('slack'), body, slack('not-the-signing-secret', body));
    expect(forged.status).toBe(401);
    expect(forged.text).not.toContain(challenge);
    // Only Slack's scheme answers it: another integration sees a body that is no event.
    const gh = await post(url('gh'), body, { 'x-hub-signature-256': await octokitSign(GH_SECRET, body) });
    expect(gh.status).toBe(400);
    // And a Slack integration still takes events.
    const event = JSON.stringify({ source: 'slack-bot', severity: 'minor', run: 'slack' });
    expect((await post(url('slack'), event, slack(SLACK_SECRET, event))).status).toBe(200);
    await waitFor('event written', async () => eventsWith(ing, 'slack').length === 1);
    expect(eventLines(ing.stdout()).length).toBe(stored + 1);
  });

  it('basic+signature needs both', async () => {
    const body = JSON.stringify({ source: 'both-01', severity: 2, run: 'both' });
    const signature = { 'x-hub-signature-256': await octokitSign(GH_SECRET, body) };
    const password = { authorization: basic('both', 'both-password') };
    expect((await post(url('both'), body, signature)).status).toBe(401);
    expect((await post(url('both'), body, password)).status).toBe(401);
    expect((await post(url('both'), body, { ...signature, ...password })).status).toBe(200);
  });

  it('keeps Basic integrations as they were', async () => {
    const res = await post(
      url('demo'),
      { source: 'demo', severity: 1 },
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    expect(res.status).toBe(200);
  });
});

describe('the brute-force guard counts wrong signatures', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await startIngester((c) => {
      withSignedRoutes(new Date(Date.now() + 60_000))(c);
      c.authThrottle = { failures: 3, window: '1m', block: '1m', failureDelay: '0s' };
    });
  });
  afterAll(async () => {
    await ing.stop();
  });

  it('blocks the address after 3 wrong signatures, then refuses even a right one with 429', async () => {
    const url = `${ing.url}/events/webhook_gh`;
    const body = JSON.stringify({ source: 'gh-02', severity: 2 });
    const wrong = { 'x-hub-signature-256': await octokitSign('guess', body) };
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await post(url, body, wrong)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const right = await post(url, body, { 'x-hub-signature-256': await octokitSign(GH_SECRET, body) });
    expect(right.status).toBe(429);
  });
});

describe('two replicas on one JetStream', () => {
  let nats: RunningNats;
  const replicas: RunningIngester[] = [];
  beforeAll(async () => {
    nats = await startNats();
    for (let i = 0; i < 2; i++)
      replicas.push(
        await startIngester((c) => {
          withSignedRoutes(new Date(Date.now() + 60_000))(c);
          handoffConfig(nats)(c);
        }),
      );
  }, 60_000);
  afterAll(async () => {
    for (const r of replicas) await r.stop();
    await nats?.stop();
  });

  it('stores a webhook-id sent to both replicas once: its events are named by it', async () => {
    const body = JSON.stringify({ source: 'sw-05', severity: 5, run: 'two-replicas' });
    const headers = standardWebhooks(SW_SECRET, 'msg_two_replicas', body);
    for (const r of replicas) expect((await post(`${r.url}/events/webhook_sw`, body, headers)).status).toBe(200);
    const stored = await readStream(nats.url, 'INTAKE_EVENTS');
    const ours = stored.filter((s) => (s.event.custom_info as Record<string, unknown>)?.run === 'two-replicas');
    expect(ours).toHaveLength(1);
  }, 30_000);
});
