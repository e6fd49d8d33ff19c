/**
 * `intake status` prints delivery beside the activity, through the built CLI against the built
 * ingester: per destination its circuit, pause, backlog, oldest pending event, last success and
 * last failure (the receiver's status code, and its answer below the table, printed inert), read
 * from `GET /status/delivery`; `-o json` and `-o yaml` carry the same report under `delivery`,
 * beside the activity report's fields as before. An ingester older than the report (its admin
 * listener answers 404) prints "not reported"; a report that cannot be read (5xx, an answer that is
 * not JSON) fails the command with an error naming it. Every address used is loopback.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import type { ActivityReport } from '../../api/activity.js';
import type { DeliveryReport } from '../../api/delivery-status.js';
import { ROOT } from '../support/paths.js';
import { waitFor } from '../support/waiting.js';
import { startEventReceiver, type EventReceiver } from './support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from './support/ingester.js';

const run = promisify(execFile);
const intake = (args: string[]) => run(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), ...args]);

type StatusJson = ActivityReport & { delivery?: DeliveryReport };

let receiver: EventReceiver;
let ing: RunningIngester;
let dir: string;

beforeAll(async () => {
  receiver = await startEventReceiver();
  dir = mkdtempSync(join(tmpdir(), 'intake-e2e-status-delivery-'));
  ing = await startIngester((c) => {
    c.spool = { path: dir };
    c.destinations = [
      {
        name: 'tickets',
        default: true,
        http: { url: receiver.url, timeout: '2s' },
        delivery: { maxAttempts: 100, backoffMin: '50ms', backoffMax: '100ms' },
        circuitBreaker: { consecutiveFailures: 3, openFor: '60s' },
      },
      { name: 'held', default: true, suspend: true, http: { url: receiver.url } },
    ];
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('intake status prints each destination: circuit, paused, backlog, oldest pending, last success and failure', async () => {
  receiver.failWith = { status: 503, body: 'maintenance \u001b[2J window' };
  const events = Array.from({ length: 5 }, (_, i) => ({ source: `status-${i}`, severity: 'critical' }));
  const res = await post(`${ing.url}/events/webhook_demo`, events, { authorization: basic(DEMO.user, DEMO.password) });
  expect(res.status).toBe(200);
  // Open, and what waits measured (every 5 s).
  await waitFor(
    'the open circuit and the backlog reported',
    async () => {
      const json = JSON.parse(
        (await intake(['status', '--admin-url', ing.adminUrl, '-o', 'json'])).stdout,
      ) as StatusJson;
      const d = json.delivery?.destinations.find((x) => x.name === 'tickets');
      return d?.circuit === 'open' && (d.backlog ?? 0) > 0;
    },
    30_000,
    250,
  );

  const { stdout, stderr } = await intake(['status', '--admin-url', ing.adminUrl]);
  expect(stderr).toBe('');
  // The activity table first, as before; the delivery table below it.
  expect(stdout).toMatch(/^KIND\s+NAMESPACE\s+NAME\s+LAST EVENT/m);
  expect(stdout).toMatch(
    /^DESTINATION\s+KIND\s+CIRCUIT\s+PAUSED\s+BACKLOG\s+OLDEST PENDING\s+LAST SUCCESS\s+LAST FAILURE\s+DELIVERED 1H\s+FAILED 1H\s+DEAD-LETTERED 1H$/m,
  );
  const tickets = stdout.split('\n').find((l) => l.startsWith('tickets ')) as string;
  expect(tickets).toMatch(
    /^tickets\s+http\s+open\s+False\s+[1-9]\d*\s+\d+s\s+never\s+\d+s \(503\)\s+0\s+[1-9]\d*\s+0$/,
  );
  const held = stdout.split('\n').find((l) => l.startsWith('held ')) as string;
  expect(held).toMatch(/^held\s+http\s+closed\s+True \(settings\)\s+\S+\s+\S+\s+never\s+never\s+0\s+0\s+0$/);
  // The receiver's answer, below the table, with its escape sequence shown, never acted on.
  expect(stdout).toMatch(
    /last failures \(newest first\):\n {2}\S+ {2}tickets {2}503: HTTP 503: maintenance \\x1b\[2J window/,
  );
  expect(stdout).not.toContain('\u001b');

  const json = JSON.parse((await intake(['status', '--admin-url', ing.adminUrl, '-o', 'json'])).stdout) as StatusJson;
  // The activity report's fields as before, the delivery report beside them.
  expect(json.webhookIntegrations.find((a) => a.name === 'demo')?.eventsLastHour).toBe(5);
  const reported = json.delivery?.destinations.find((d) => d.name === 'tickets');
  expect(reported).toMatchObject({ kind: 'http', circuit: 'open', paused: false, deliveredLastHour: 0 });
  expect(reported?.lastFailure?.statusCode).toBe(503);
  expect(json.delivery?.destinations.find((d) => d.name === 'held')).toMatchObject({
    paused: true,
    pausedBy: 'settings',
  });

  const yaml = await intake(['status', '-o', 'yaml', '--admin-url', ing.adminUrl]);
  expect(yaml.stderr).toBe('');
  const fromYaml = parse(yaml.stdout) as StatusJson;
  expect(fromYaml.delivery?.destinations.map((d) => d.name).sort()).toEqual(['held', 'tickets']);
  expect(fromYaml.delivery?.destinations.find((d) => d.name === 'tickets')?.lastFailure?.statusCode).toBe(503);
}, 90_000);

it('intake status says delivery is not reported by an older ingester (404), and fails naming the report on any other failure', async () => {
  // An admin listener in front of the real one: the activity is the ingester's, the delivery report as set here.
  let delivery = { status: 404, type: 'application/json', body: '{"code":"NOT_FOUND","message":"not found"}' };
  const front = createServer((req, res) => {
    if (req.url === '/status/delivery') {
      res.writeHead(delivery.status, { 'content-type': delivery.type }).end(delivery.body);
      return;
    }
    fetch(`${ing.adminUrl}${req.url}`).then(
      async (r) => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text()),
      () => res.writeHead(502).end(),
    );
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  const attempt = (args: string[]) =>
    intake(args).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
  try {
    const older = await attempt(['status', '--admin-url', frontUrl]);
    expect(older.code).toBe(0);
    expect(older.stdout).toMatch(/^KIND\s+NAMESPACE\s+NAME\s+LAST EVENT/m);
    expect(older.stdout).toContain('delivery: this ingester does not report it (GET /status/delivery)');

    delivery = { status: 500, type: 'application/json', body: '{"code":"INTERNAL","message":"boom"}' };
    const failing = await attempt(['status', '--admin-url', frontUrl]);
    expect(failing.code).toBe(2);
    expect(failing.stdout).toBe('');
    expect(failing.stderr).toBe(
      `intake: cannot read the delivery report (GET /status/delivery): GET ${frontUrl}/status/delivery: 500 {"code":"INTERNAL","message":"boom"}\n`,
    );

    delivery = { status: 200, type: 'text/html', body: '<html>a proxy page</html>' };
    const notJson = await attempt(['status', '--admin-url', frontUrl, '-o', 'json']);
    expect(notJson.code).toBe(2);
    expect(notJson.stdout).toBe('');
    expect(notJson.stderr).toMatch(
      /^intake: cannot read the delivery report \(GET \/status\/delivery\): .*not JSON: <html>a proxy page<\/html>\n$/,
    );
  } finally {
    await new Promise((resolve) => front.close(resolve));
  }
}, 60_000);
