/**
 * Which refusals are a tenant's and which a stranger's (docs/activity.md#sender-text): a refusal of
 * a request that proved its credentials is kept with the User-Agent it sent; one refused before
 * (a wrong password, Basic right but signature wrong, a signed body too large before its
 * signature is checked) is kept as its address and reason only.
 */
import { createHmac } from 'node:crypto';
import type { Route } from '../../../../api/route.js';
import { ActivityRecorder } from '../../../../ingester/activity/recorder.js';
import { basic } from '../../../support/credentials.js';
import { demoRoutes, harness } from '../harness.js';

const GH_SECRET = 'a-github-webhook-secret';
const github = (body: string, secret = GH_SECRET) => ({
  'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
});
const routes: Route[] = [
  ...demoRoutes(),
  {
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'both',
    namespace: 'team-s',
    credentials: [{ username: 'both', secret: { plain: 'both-password' } }],
    authentication: { mode: 'basic+signature', signature: { scheme: 'github', secrets: [{ value: GH_SECRET }] } },
  } as Route,
];

describe('activity: refusals before and after authentication', () => {
  it("keeps a tenant's refusals with their User-Agent, and a stranger's as an address and a reason", async () => {
    const activity = new ActivityRecorder();
    const h = await harness({ routes, activity, bodyBytes: 256 });
    const ua = { 'user-agent': 'URGENT from intake platform team' };
    const event = JSON.stringify({ source: 'h', severity: 'critical' });
    const both = basic('both', 'both-password');
    const answers = [
      // A stranger: a wrong password; Basic right but the signature wrong; no signature at all;
      // a signed integration's body too large, refused before its signature could be checked.
      await h.postEvents(event, { ...ua, authorization: basic('demo', 'guess') }),
      await h.postEvents(event, { ...ua, authorization: both, ...github(event, 'guess') }, 'both'),
      await h.postEvents(event, { ...ua, authorization: both }, 'both'),
      await h.postEvents('x'.repeat(1000), { ...ua, authorization: both, ...github('x'.repeat(1000)) }, 'both'),
      // The tenants: a body without a source; a right signature over a bad body; a suspended integration.
      await h.postEvents({ severity: 'critical' }, { 'user-agent': 'demo-sender/1.0' }),
      await h.postEvents('{', { 'user-agent': 'gh-hookshot/1.0', authorization: both, ...github('{') }, 'both'),
      await h.postEvents(event, { 'user-agent': 'paused-sender/1.0', authorization: basic('paused', 'pw') }, 'paused'),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([401, 401, 401, 413, 400, 400, 403]);
    // Recorded once the answer is sent (onResponse).
    await new Promise((r) => setTimeout(r, 50));
    const report = activity.report();
    const of = (name: string) => report.webhookIntegrations.find((a) => a.name === name);
    expect(of('demo')?.recentRefusals.map((f) => [f.status, f.userAgent])).toEqual([[400, 'demo-sender/1.0']]);
    expect(of('demo')?.unauthenticatedSenders?.map((s) => [s.reason, s.count])).toEqual([['unauthorized', 1]]);
    expect(of('both')?.recentRefusals.map((f) => [f.status, f.code, f.userAgent])).toEqual([
      [400, 'INVALID_JSON', 'gh-hookshot/1.0'],
    ]);
    expect(
      of('both')
        ?.unauthenticatedSenders?.map((s) => [s.reason, s.status])
        .sort(),
    ).toEqual([
      ['signature_invalid', 401],
      ['signature_missing', 401],
      ['too_large', 413],
    ]);
    expect(of('paused')?.recentRefusals.map((f) => [f.status, f.userAgent])).toEqual([[403, 'paused-sender/1.0']]);
    expect(JSON.stringify(report)).not.toContain('URGENT');
    await h.app.close();
  });
});
