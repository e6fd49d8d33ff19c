/**
 * The admin port's request checks, through the built ingester (http/admin-guard.ts):
 * - a replay without `X-Intake-Admin: true`, or without a JSON object body sent as
 *   application/json (what a cross-site form or no-cors fetch sends), is refused and replays
 *   nothing (before: `POST /deadletter/replay` with no body and no Content-Type replayed);
 * - the port answers only a Host that is an IP literal, localhost or a configured name: a page
 *   whose name was rebound to 127.0.0.1 gets 421, not every tenant's dead letters (before: any Host);
 * - no CORS preflight is granted;
 * - `intake deadletter list|replay` still work end to end.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { parse, stringify } from 'yaml';
import { ADMIN_WRITE_HEADERS, adminPost } from '../support/admin.js';
import { waitFor } from '../support/waiting.js';
import { startIngester, type RunningIngester } from './support/ingester.js';
import { cli, FIXED, integration, listLetters, sendAs } from './dead-letters/support.js';

jest.setTimeout(60_000);

const SERVICE_NAME = 'intake-ingester-admin.intake.svc';
let dir: string;
let ing: RunningIngester;
let adminPort: number;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One admin request with exactly these headers (fetch would not let a test choose Host). */
function adminRequest(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: adminPort, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const local = (): Record<string, string> => ({ host: `127.0.0.1:${adminPort}` });
const codeOf = (a: Answer): string | undefined => (JSON.parse(a.body) as { code?: string }).code;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'intake-e2e-admin-'));
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push(integration('fixme', 'team-b'));
    c.sinks = { log: { path: join(dir, 'events.jsonl') } };
    c.deadLetter = { path: join(dir, 'deadletter.sqlite') };
    c.adminAllowedHosts = [SERVICE_NAME];
  });
  adminPort = Number(new URL(ing.adminUrl).port);
  const res = await sendAs(ing, 'fixme', { hostname: 'db-7', level: 3 });
  expect(res.status).toBe(422);
});
afterAll(async () => {
  await ing?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('a state-changing admin call needs X-Intake-Admin: true and a JSON object body', () => {
  it.each([
    ['no body, no Content-Type (a no-cors fetch)', {}, undefined, 403, 'ADMIN_HEADER_REQUIRED'],
    [
      'a cross-site form',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'kind=mapping',
      403,
      'ADMIN_HEADER_REQUIRED',
    ],
    ['JSON without the header', { 'content-type': 'application/json' }, '{}', 403, 'ADMIN_HEADER_REQUIRED'],
    [
      'the header set to something else',
      { ...ADMIN_WRITE_HEADERS, 'x-intake-admin': '1' },
      '{}',
      403,
      'ADMIN_HEADER_REQUIRED',
    ],
    [
      'the header and text/plain',
      { 'x-intake-admin': 'true', 'content-type': 'text/plain' },
      '{}',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    ['the header and no body', { 'x-intake-admin': 'true' }, undefined, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['the header, application/json, an empty body', ADMIN_WRITE_HEADERS, undefined, 400, 'BAD_REQUEST'],
    ['the header, application/json, an array', ADMIN_WRITE_HEADERS, '[]', 400, 'INVALID_JSON'],
  ])('%s: refused, nothing replayed', async (_what, headers, body, status, code) => {
    const answer = await adminRequest('POST', '/deadletter/replay', { ...local(), ...headers }, body);
    expect({ status: answer.status, code: codeOf(answer) }).toEqual({ status, code });
    expect(JSON.parse(answer.body)).toMatchObject({ success: false });
    expect((await listLetters(ing)).count).toBe(1);
  });

  it('a body field that is no filter is refused, not ignored', async () => {
    const res = await fetch(`${ing.adminUrl}/deadletter/replay`, adminPost({ knd: 'mapping' }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_query', field: 'knd' });
    const twice = await fetch(`${ing.adminUrl}/deadletter/replay?kind=delivery`, adminPost({ kind: 'mapping' }));
    expect(twice.status).toBe(400);
    expect((await listLetters(ing)).count).toBe(1);
  });

  it('grants no CORS preflight', async () => {
    const answer = await adminRequest('OPTIONS', '/deadletter/replay', {
      ...local(),
      origin: 'https://attacker.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, x-intake-admin',
    });
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(Object.keys(answer.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});

describe('the admin port answers only an IP literal, localhost or a configured name as Host', () => {
  const foreign = [
    'attacker.example',
    'attacker.example:8081',
    'localhost.attacker.example',
    '127.0.0.1.nip.io',
    'intake-ingester-admin.intake.svc.attacker.example',
    '::1',
  ];
  it.each(foreign)('Host %s: 421 on every path', async (host) => {
    for (const path of ['/deadletter?payload=true', '/metrics/ingested', '/status/activity', '/healthz']) {
      const answer = await adminRequest('GET', path, { host });
      expect({ path, status: answer.status, code: codeOf(answer) }).toEqual({
        path,
        status: 421,
        code: 'HOST_NOT_ALLOWED',
      });
      expect(answer.body).not.toContain('db-7');
    }
    const write = await adminRequest('POST', '/deadletter/replay', { host, ...ADMIN_WRITE_HEADERS }, '{}');
    expect(write.status).toBe(421);
    expect((await listLetters(ing)).count).toBe(1);
  });

  it.each([
    () => `127.0.0.1:${adminPort}`,
    () => `localhost:${adminPort}`,
    () => 'LocalHost',
    () => `[::1]:${adminPort}`,
    () => '10.244.1.7:8081',
    () => `${SERVICE_NAME}:8081`,
    () => `${SERVICE_NAME.toUpperCase()}.`,
  ])('Host %#: answered', async (host) => {
    const answer = await adminRequest('GET', '/deadletter?payload=true', { host: host() });
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('db-7');
  });
});

describe('the CLI sends what is required', () => {
  it('intake deadletter list and replay work end to end', async () => {
    const listed = await cli(['deadletter', 'list', '--admin-url', ing.adminUrl, '--integration', 'fixme']);
    expect(listed.stdout).toContain('1 dead letter(s) listed');
    const config = parse(readFileSync(ing.configPath, 'utf8')) as {
      routes: Array<{ name: string; mapping?: unknown }>;
    };
    (config.routes.find((r) => r.name === 'fixme') as { mapping?: unknown }).mapping = FIXED;
    writeFileSync(ing.configPath, stringify(config));
    await waitFor(
      'fixed mapping loaded',
      async () => (await sendAs(ing, 'fixme', { hostname: 'probe', level: 1 }, '?dryRun=true')).status === 200,
      15_000,
      100,
    );
    // A replay that fails exits 1: its table (the failure's reason) is what the assertion shows.
    const replayed = await cli(['deadletter', 'replay', '--admin-url', ing.adminUrl, '--kind', 'mapping']).catch(
      (err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
    );
    expect(replayed.stdout).toContain('1 replayed, 0 failed');
    expect((await listLetters(ing)).count).toBe(0);
  });

  it('no longer serves the pre-release paths and command (/destinations/deadletter, intake undelivered)', async () => {
    expect((await fetch(`${ing.adminUrl}/destinations/deadletter`)).status).toBe(404);
    expect(
      (await adminRequest('POST', '/destinations/deadletter/replay', { ...local(), ...ADMIN_WRITE_HEADERS }, '{}'))
        .status,
    ).toBe(404);
    const old = await cli(['undelivered', 'list', '--admin-url', ing.adminUrl]).catch((err: unknown) => err);
    expect(String((old as { stderr?: string }).stderr ?? old)).toContain("unknown command 'undelivered'");
  });
});
