/**
 * The event inspector through the built ingester, standalone (no bus; the outbox in the storage
 * directory): a real Alertmanager payload sent to an integration that enabled the inspector is
 * listed on the admin port with its headers (without credentials, tokens or cookies), its body,
 * the events the preset mapped it to, each event's routing (which rule, which destinations) and
 * the delivery attempts per destination; a stranger's requests are never kept; the integration
 * keeps its newest `requests` only; a body past the cap is cut and marked; one captured event is
 * replayed to its destinations; an integration without spec.inspect keeps nothing.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import type { CapturedRequest, CapturedRequestSummary } from '../../../api/inspector.js';
import { ROOT } from '../../support/paths.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from '../support/ingester.js';

const fixture = JSON.parse(readFileSync(join(ROOT, 'test/unit/api/mapping/fixtures/alertmanager.json'), 'utf8')) as {
  cases: Array<{ input: unknown }>;
};
const ALERTMANAGER_PAYLOAD = JSON.stringify(fixture.cases[0]?.input);
const KEEP = 3;

let ing: RunningIngester;
let receiver: EventReceiver;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intake-e2e-inspector-'));
  receiver = await startEventReceiver();
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push(
      tenantRoute('am', 'team-a', {
        mapping: { preset: 'alertmanager' },
        inspect: { enabled: true, requests: KEEP },
        rules: [{ name: 'critical-pages', match: { severity: { min: 'critical' } }, destinations: ['pager'] }],
      }),
      tenantRoute('plain', 'team-a'),
      tenantRoute('tight', 'team-a', {
        inspect: { enabled: true },
        limits: { eventsPerSecond: 1, eventsBurst: 1 },
      }),
    );
    c.spool = { path: dir };
    c.destinations = [
      { name: 'tickets', default: true, http: { url: `${receiver.url}/tickets` } },
      { name: 'pager', http: { url: `${receiver.url}/pager` } },
    ];
    c.inspector = { maxBodyBytes: 2048 };
  });
}, 60_000);

afterAll(async () => {
  await ing?.stop();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

const list = async (integration = 'am'): Promise<{ status: number; requests: CapturedRequestSummary[] }> => {
  const res = await fetch(`${ing.adminUrl}/inspector/team-a/${integration}`);
  const body = (await res.json()) as { requests: CapturedRequestSummary[] };
  return { status: res.status, requests: body.requests };
};
const read = async (id: string): Promise<CapturedRequest> =>
  (await (await fetch(`${ing.adminUrl}/inspector/team-a/am/${id}`)).json()) as CapturedRequest;
const send = (body: string, headers: Record<string, string> = tenantAuth('am')) =>
  post(`${ing.url}/events/webhook_am`, body, headers);

it('shows a real Alertmanager request with its events, routing and delivery attempts, without secrets', async () => {
  const res = await send(ALERTMANAGER_PAYLOAD, {
    ...tenantAuth('am'),
    cookie: 'session=never-kept',
    'x-tool-token': 'never-kept-either',
    'user-agent': 'Alertmanager/0.25.0',
  });
  expect(res.status).toBe(200);
  const { status, requests } = await list();
  expect(status).toBe(200);
  expect(requests).toHaveLength(1);
  expect(requests[0]).toMatchObject({ status: 200, eventCount: 2, namespace: 'team-a', integration: 'am' });

  const captured = await read(requests[0]?.id as string);
  expect(captured.body).toBe(ALERTMANAGER_PAYLOAD);
  expect(captured.bodyTruncated).toBe(false);
  expect(captured.headers['user-agent']).toBe('Alertmanager/0.25.0');
  expect(JSON.stringify(captured.headers)).not.toMatch(/never-kept|am-password|authorization|cookie/i);
  expect(captured.remoteAddress).toBe('127.0.0.1');
  expect(captured.events?.map((e) => (e as { source: string }).source)).toEqual(['web-1', 'web-2']);
  // The critical alert matched the rule and goes to the pager; the other one to the default destination.
  expect(captured.routing).toEqual([
    { matched: ['critical-pages'], destinations: ['pager'] },
    { matched: [], destinations: ['tickets'] },
  ]);
  // Each event's delivery, recorded against it by the delivering side.
  await waitFor(
    'both deliveries recorded',
    async () => ((await read(captured.id)).attempts ?? []).length >= 2,
    15_000,
    100,
  );
  const { attempts } = await read(captured.id);
  expect(attempts).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ event: 0, destination: 'pager', status: 200, outcome: 'delivered' }),
      expect.objectContaining({ event: 1, destination: 'tickets', status: 200, outcome: 'delivered' }),
    ]),
  );
}, 40_000);

it('keeps refusals after authentication, never a stranger’s request', async () => {
  const before = (await list()).requests.length;
  expect((await send(ALERTMANAGER_PAYLOAD, { authorization: basic('am', 'wrong') })).status).toBe(401);
  expect((await send('{"never-kept": true', { authorization: basic('am', 'wrong') })).status).toBe(401);
  expect((await list()).requests.length).toBe(before);
  // The tenant's own malformed request is kept, with its refusal: that is what it needs to see.
  expect((await send('{"receiver": ')).status).toBe(400);
  const { requests } = await list();
  expect(requests.length).toBe(before + 1);
  expect(requests[0]).toMatchObject({ status: 400, refusal: { code: 'INVALID_JSON' }, eventCount: 0 });
});

it('keeps the newest requests only, and cuts a body past the cap', async () => {
  const big = JSON.stringify({ ...(fixture.cases[0]?.input as object), padding: 'x'.repeat(4000) });
  for (let i = 0; i < KEEP; i++) expect((await send(i === KEEP - 1 ? big : ALERTMANAGER_PAYLOAD)).status).toBe(200);
  const { requests } = await list();
  expect(requests).toHaveLength(KEEP);
  const times = requests.map((r) => r.receivedAt);
  expect([...times].sort().reverse()).toEqual(times);
  expect(requests[0]).toMatchObject({ bodyTruncated: true, bodyBytes: Buffer.byteLength(big) });
  expect((await read(requests[0]?.id as string)).body).toHaveLength(2048);
});

it('replays one captured event to its destinations, as a new event', async () => {
  const { requests } = await list();
  const captured = await read(requests[1]?.id as string);
  const original = captured.events?.[0] as { id: string; source: string };
  const pagerBefore = receiver.requests.filter((r) => r.events.some((e) => e.source === original.source)).length;
  const res = await fetch(`${ing.adminUrl}/inspector/team-a/am/${captured.id}/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-intake-admin': 'true' },
    body: JSON.stringify({ event: 0 }),
  });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  expect(id).not.toBe(original.id);
  await waitFor('the replayed event delivered', async () => receiver.accepted.has(id), 15_000, 100);
  expect(receiver.requests.filter((r) => r.events.some((e) => e.source === original.source)).length).toBe(
    pagerBefore + 1,
  );
}, 30_000);

it('replays only with the admin header, and within the tenant’s event rate', async () => {
  expect(
    (await post(`${ing.url}/events/webhook_tight`, { source: 's', severity: 2 }, tenantAuth('tight'))).status,
  ).toBe(200);
  const [captured] = (await list('tight')).requests;
  const replay = (headers: Record<string, string>) =>
    fetch(`${ing.adminUrl}/inspector/team-a/tight/${captured?.id}/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ event: 0 }),
    });
  // Its one event a second was just spent by the request itself.
  const refused = await replay({ 'x-intake-admin': 'true' });
  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).not.toBeNull();
  expect(((await refused.json()) as { error: string }).error).toBe('RATE_LIMITED');
  expect((await replay({})).status).toBe(403);
});

it('keeps nothing for an integration that did not enable the inspector', async () => {
  expect(
    (await post(`${ing.url}/events/webhook_plain`, { source: 's', severity: 2 }, tenantAuth('plain'))).status,
  ).toBe(200);
  expect((await list('plain')).status).toBe(404);
});

describe('intake inspect', () => {
  const run = promisify(execFile);
  const intake = (args: string[]) =>
    run(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), ...args, '--admin-url', ing.adminUrl]);

  it('lists (table, json, yaml) and shows a request without its secrets', async () => {
    const { requests } = await list();
    const table = (await intake(['inspect', 'list', 'team-a/am'])).stdout;
    expect(table).toMatch(/^ID\s+RECEIVED\s+FROM\s+STATUS/);
    expect(table).toContain(requests[0]?.id);
    expect(table).toContain(`${KEEP} request(s) kept`);
    const json = JSON.parse((await intake(['inspect', 'list', 'team-a/am', '-o', 'json'])).stdout) as {
      requests: CapturedRequestSummary[];
    };
    expect(json.requests.map((r) => r.id)).toEqual(requests.map((r) => r.id));
    const yaml = parse(
      (await intake(['inspect', 'show', 'team-a/am', requests[1]?.id as string, '-o', 'yaml'])).stdout,
    ) as CapturedRequest;
    expect(yaml.events).toHaveLength(2);
    const shown = (await intake(['inspect', 'show', 'team-a/am', requests[1]?.id as string])).stdout;
    expect(shown).toContain('-> pager (rules critical-pages)');
    expect(shown).not.toMatch(/am-password|authorization/i);
  });

  it('replays one event', async () => {
    const { requests } = await list();
    const out = (await intake(['inspect', 'replay', 'team-a/am', requests[1]?.id as string, '--event', '1'])).stdout;
    const id = /replayed as event (\S+)/.exec(out)?.[1] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await waitFor('the replayed event delivered', async () => receiver.accepted.has(id), 15_000, 100);
  });

  it('says which integration is not inspected', async () => {
    await expect(intake(['inspect', 'list', 'team-a/plain'])).rejects.toMatchObject({
      stderr: expect.stringContaining('does not enable the inspector'),
    });
  });
});
