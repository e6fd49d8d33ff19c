/**
 * `intake status`'s delivery half against a stand-in admin listener on 127.0.0.1: an ingester
 * older than the delivery report (404) is "not reported"; every other failure is an error that
 * names what failed, never taken for a missing report.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AdminCallError, adminCall } from '../../../cmd/admin-client.js';
import { deliveryReport } from '../../../cmd/commands/status.js';
import { ConfigError } from '../../../common/config-files.js';

let answer: { status: number; type: string; body: string } = { status: 200, type: 'application/json', body: '{}' };
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(answer.status, { 'content-type': answer.type });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const json = (status: number, body: unknown) => ({ status, type: 'application/json', body: JSON.stringify(body) });

describe('the delivery report of intake status', () => {
  it('is the report when the ingester gives one', async () => {
    answer = json(200, { destinations: [{ name: 'tickets', kind: 'http' }] });
    expect(await deliveryReport(url)).toEqual({ destinations: [{ name: 'tickets', kind: 'http' }] });
  });

  it('is not reported (undefined) from an ingester older than it, which answers 404, JSON or not', async () => {
    answer = json(404, { code: 'NOT_FOUND', message: 'Route GET:/status/delivery not found' });
    expect(await deliveryReport(url)).toBeUndefined();
    answer = { status: 404, type: 'text/plain', body: 'Not Found' };
    expect(await deliveryReport(url)).toBeUndefined();
  });

  it.each([
    ['a 500', json(500, { code: 'INTERNAL', message: 'boom' }), /: 500 \{"code":"INTERNAL","message":"boom"\}$/],
    [
      'a 503 from a proxy, in HTML',
      { status: 503, type: 'text/html', body: '<html>down</html>' },
      /: 503 <html>down<\/html>$/,
    ],
    [
      'an answer that is not JSON',
      { status: 200, type: 'application/json', body: '{"destinations": [' },
      /: 200 with an answer that is not JSON: \{"destinations": \[$/,
    ],
    ['JSON that is no delivery report', json(200, { items: [] }), /: the answer has no list of destinations$/],
    ['JSON null', json(200, null), /: the answer has no list of destinations$/],
  ])('is an error naming the delivery report and what failed: %s', async (_what, given, detail) => {
    answer = given;
    const err = (await deliveryReport(url).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/^cannot read the delivery report \(GET \/status\/delivery\): /);
    expect(err.message).toMatch(detail);
  });

  it('is an error naming the listener when it cannot be reached', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const err = (await deliveryReport(gone).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(
      /^cannot read the delivery report \(GET \/status\/delivery\): cannot reach the ingester's admin listener at http:\/\/127\.0\.0\.1:\d+\/status\/delivery: .*ECONNREFUSED/,
    );
  });
});

describe('adminCall', () => {
  it('carries the status of a refusal, so a caller can tell a missing endpoint from a failure', async () => {
    answer = json(404, { code: 'NOT_FOUND' });
    const err = (await adminCall(`${url}/x`, 'GET').catch((e: unknown) => e)) as AdminCallError;
    expect(err).toBeInstanceOf(AdminCallError);
    expect(err.status).toBe(404);
  });

  it('quotes an answer that is not JSON short and inert', async () => {
    answer = { status: 502, type: 'text/plain', body: `bad gateway \u001b[2J${'x'.repeat(1000)}` };
    const err = (await adminCall(`${url}/x`, 'GET').catch((e: unknown) => e)) as AdminCallError;
    expect(err.status).toBe(502);
    expect(err.message).not.toContain('\u001b');
    expect(err.message).toContain('bad gateway \\x1b[2J');
    expect(err.message.length).toBeLessThan(400);
  });
});
