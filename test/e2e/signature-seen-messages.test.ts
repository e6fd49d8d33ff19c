/**
 * The memory of seen signed messages lasts as long as a repeat is accepted. A signed timestamp ahead of the clock is
 * accepted until `timestamp + tolerance`, later than `tolerance` after the first 200; a repeat of
 * it sent after `tolerance` but while its timestamp is still accepted must be answered from the
 * memory, not written a second time (the log sink has no duplicate check of its own).
 */
import { Webhook } from 'standardwebhooks';
import { waitFor } from '../support/waiting.js';
import { eventLines, post, startIngester, type RunningIngester } from './support/ingester.js';

const SECRET = 'whsec_' + Buffer.alloc(32, 3).toString('base64');
const TOLERANCE_S = 4;

let ing: RunningIngester | undefined;

afterAll(async () => {
  await ing?.stop();
});

const written = (run: string): number =>
  eventLines(ing!.stdout()).filter((e) => (e.custom_info as Record<string, unknown> | undefined)?.run === run).length;

it('answers a repeat of a message stamped ahead of the clock from memory for as long as its timestamp is accepted', async () => {
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      name: 'ahead',
      namespace: 'team-r',
      credentials: [],
      authentication: {
        mode: 'signature',
        signature: { scheme: 'standard-webhooks', tolerance: `${TOLERANCE_S}s`, secrets: [{ value: SECRET }] },
      },
    });
  });
  const body = JSON.stringify({ source: 'ahead-01', severity: 2, run: 'ahead-run' });
  // Stamped almost a tolerance ahead: accepted until about 2 x tolerance from now.
  const at = new Date((Math.floor(Date.now() / 1000) + TOLERANCE_S - 1) * 1000);
  const headers = {
    'content-type': 'application/json',
    'webhook-id': 'msg_ahead_of_clock',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(SECRET).sign('msg_ahead_of_clock', at, body),
  };
  const first = await post(`${ing.url}/events/webhook_ahead`, body, headers);
  const firstAt = Date.now();
  expect(first.status).toBe(200);
  await waitFor('the first copy written', async () => written('ahead-run') === 1);

  // Past the tolerance since the first 200, still inside the timestamp's window.
  const repeatAt = firstAt + TOLERANCE_S * 1000 + 1000;
  const acceptedUntil = at.getTime() + TOLERANCE_S * 1000;
  expect(repeatAt).toBeLessThan(acceptedUntil - 300);
  await new Promise((r) => setTimeout(r, repeatAt - Date.now()));
  const repeat = await post(`${ing.url}/events/webhook_ahead`, body, headers);
  expect(repeat.status).toBe(200);
  expect(Date.now()).toBeLessThan(acceptedUntil);

  await new Promise((r) => setTimeout(r, 500));
  expect(written('ahead-run')).toBe(1);
  const metrics = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  expect(metrics).toMatch(/intake_signed_messages_repeated_total\{integration="ahead",namespace="team-r"\} 1/);

  // Once the timestamp has left the window the repeat is refused by it (and the memory may go).
  await new Promise((r) => setTimeout(r, Math.max(0, acceptedUntil + 1200 - Date.now())));
  const late = await post(`${ing.url}/events/webhook_ahead`, body, headers);
  expect(late.status).toBe(401);
  expect(written('ahead-run')).toBe(1);
}, 30_000);
