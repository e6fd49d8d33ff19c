/**
 * `Expect: 100-continue` through the built process over raw sockets: the sender is invited to
 * upload only once its body's bytes are reserved, so one waiting for the invitation while its
 * budget is full gets the refusal before it sends a byte, and no 100 Continue.
 */
import type { Socket } from 'node:net';
import { API_KEY, basic, startIngester, tenantAuth, tenantRoute, type RunningIngester } from './support/ingester.js';
import { openSocket, rawJsonBody, waitForText } from './support/raw-http.js';

const NAMESPACE_SHARE = 4096;
const EVENT = JSON.stringify({ source: 'web-01', severity: 3 });
const POINT = JSON.stringify({ metric: 'm', data: 1, source: 's' });

const head = (path: string, auth: string, length: number, expect: boolean): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\n` +
  `Content-Length: ${length}\r\n${expect ? 'Expect: 100-continue\r\n' : ''}\r\n`;

describe('Expect: 100-continue while the body budget is full', () => {
  let ing: RunningIngester;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    ing = await startIngester((c) => {
      // A small share per namespace, and slow uploads left alone long enough to hold it.
      c.limits = {
        ...(c.limits as object),
        maxInFlightBodyBytesPerNamespace: NAMESPACE_SHARE,
        minBodyBytesPerSecond: 1,
        bodyRateGrace: '1m',
      };
      (c.routes as unknown[]).push(tenantRoute('cont-a', 'team-a'), tenantRoute('cont-b', 'team-b'));
    });
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await ing.stop();
  });

  const open = async (): Promise<Socket> => {
    const s = await openSocket(ing.port);
    sockets.push(s);
    return s;
  };

  it('refuses a sender waiting for 100 Continue at once, without inviting it, and invites once there is room', async () => {
    // Team A's share held by an upload that announced all of it and sent one byte.
    const holder = await open();
    holder.write(head('/events/webhook_cont-a', tenantAuth('cont-a').authorization, NAMESPACE_SHARE, false) + '{');
    await new Promise((r) => setTimeout(r, 300));

    // A second sender of team A waits for the invitation before its body: refused, no 100.
    const waiting = await open();
    waiting.write(head('/events/webhook_cont-a', tenantAuth('cont-a').authorization, EVENT.length, true));
    const refused = await waitForText(waiting, /\r\n\r\n\{.*\}$/s);
    expect(refused).not.toMatch(/100 Continue/);
    expect(refused).toMatch(/^HTTP\/1\.1 429 /);
    expect(refused).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(rawJsonBody(refused)).toMatchObject({
      code: 'BODY_BYTES_LIMITED',
      limit: { scope: 'namespace', setting: 'limits.maxInFlightBodyBytesPerNamespace' },
    });

    // Team B is invited as usual, uploads and gets 200.
    const other = await open();
    other.write(head('/events/webhook_cont-b', tenantAuth('cont-b').authorization, EVENT.length, true));
    expect(await waitForText(other, /100 Continue\r\n\r\n/)).toMatch(/^HTTP\/1\.1 100 Continue/);
    other.write(EVENT);
    expect(await waitForText(other, /"success":true/)).toMatch(/HTTP\/1\.1 200 /);

    // The holder gone, team A is invited again.
    holder.destroy();
    await new Promise((r) => setTimeout(r, 300));
    const again = await open();
    again.write(head('/events/webhook_cont-a', tenantAuth('cont-a').authorization, EVENT.length, true));
    expect(await waitForText(again, /100 Continue\r\n\r\n/)).toMatch(/^HTTP\/1\.1 100 Continue/);
    again.write(EVENT);
    expect(await waitForText(again, /"success":true/)).toMatch(/HTTP\/1\.1 200 /);
  }, 20_000);

  it('the metrics endpoint too: refused before the invitation while the key namespace share is full', async () => {
    const holder = await open();
    holder.write(head('/v1/integrations/metrics', basic('default', API_KEY), NAMESPACE_SHARE, false) + '[');
    await new Promise((r) => setTimeout(r, 300));
    const waiting = await open();
    waiting.write(head('/v1/integrations/metrics', basic('default', API_KEY), POINT.length, true));
    const refused = await waitForText(waiting, /\r\n\r\n\{.*\}$/s);
    expect(refused).not.toMatch(/100 Continue/);
    expect(refused).toMatch(/^HTTP\/1\.1 429 /);
    holder.destroy();
  }, 20_000);

  it('never invites a wrong password, nor a body announced over the limit', async () => {
    const wrong = await open();
    wrong.write(head('/events/webhook_cont-b', basic('cont-b', 'nope'), EVENT.length, true));
    const refused = await waitForText(wrong, /\r\n\r\n\{.*\}$/s);
    expect(refused).not.toMatch(/100 Continue/);
    expect(refused).toMatch(/^HTTP\/1\.1 401 /);

    const huge = await open();
    huge.write(head('/events/webhook_cont-b', tenantAuth('cont-b').authorization, 64 * 1024 * 1024, true));
    const tooLarge = await waitForText(huge, /\r\n\r\n\{.*\}$/s);
    expect(tooLarge).not.toMatch(/100 Continue/);
    expect(tooLarge).toMatch(/^HTTP\/1\.1 413 /);
  }, 20_000);
});
