/**
 * Per-tenant limits through the built ingester (standalone file): a tenant over its limit gets a
 * whole-request refusal (429, or 503 for senders that retry only 5xx) with Retry-After and a body
 * naming the limit, while another tenant's requests all succeed.
 */
import { jest } from '@jest/globals';
import { connect, type Socket } from 'node:net';
import { eventLines, post, startIngester, tenantAuth, tenantRoute, type RunningIngester } from './support/ingester.js';

jest.setTimeout(60_000);

const AM_PAYLOAD = {
  receiver: 'intake',
  status: 'firing',
  version: '4',
  groupKey: '{}:{alertname="Down"}',
  externalURL: 'http://am',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'Down', instance: 'web-1', severity: 'critical' },
      annotations: {},
      startsAt: '2026-11-22T20:00:00Z',
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint: 'f00d',
    },
  ],
};

let ing: RunningIngester;

const send = (name: string, body: unknown = { source: `${name}-host`, severity: 'warning' }) =>
  post(`${ing.url}/events/webhook_${name}`, body, tenantAuth(name));
const sentBy = (name: string): number => eventLines(ing.stdout()).filter((e) => e.integration === name).length;

beforeAll(async () => {
  ing = await startIngester((config) => {
    (config.routes as unknown[]).push(
      // One event per 10 s after a burst of 3: a test on a slow machine never sees a refill.
      tenantRoute('noisy', 'team-a', { limits: { eventsPerSecond: 1, eventsBurst: 3 } }),
      tenantRoute('quiet', 'team-b'),
      // One token, at 1/s: every refusal within the second says Retry-After 1.
      tenantRoute('twice', 'team-f', { limits: { eventsPerSecond: 1, eventsBurst: 1 } }),
      tenantRoute('am', 'team-c', {
        mapping: { preset: 'alertmanager' },
        limits: { eventsPerSecond: 1, eventsBurst: 1 },
      }),
      tenantRoute('plain-503', 'team-c', { limits: { eventsPerSecond: 1, eventsBurst: 1, overLimitStatus: 503 } }),
      tenantRoute('first', 'team-d', { limits: { namespace: { eventsPerSecond: 1, eventsBurst: 2 } } }),
      tenantRoute('second', 'team-d', { limits: { namespace: { eventsPerSecond: 1, eventsBurst: 2 } } }),
      tenantRoute('costly', 'team-e', {
        mapping: { expression: '($n := $count([1..100000]); {"source": "h" & $string($n), "severity": 2})' },
        limits: { namespace: { mappingCpuMillisPerSecond: 1, mappingCpuBurstMillis: 1 } },
      }),
      {
        apiVersion: 'intake.dev/v1alpha1',
        kind: 'ApiKey',
        name: 'meter',
        namespace: 'team-a',
        credentials: [{ username: 'team-a', secret: { plain: 'team-a_0123456789abcdef0123456789abcdef' } }],
        limits: { dataPointsPerSecond: 1, dataPointsBurst: 2 },
      },
    );
    config.tenantLimits = {
      integration: { eventsPerSecond: 1000, eventsBurst: 1000 },
      namespace: { eventsPerSecond: 1000, eventsBurst: 1000 },
    };
  });
});

afterAll(async () => {
  await ing?.stop();
});

describe('an integration over its limit', () => {
  it('is refused whole with 429, Retry-After and a body naming scope, limit, burst and the field to raise, once its burst is spent', async () => {
    for (let i = 0; i < 3; i++) expect((await send('noisy')).status).toBe(200);
    const refused = await send('noisy');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = refused.json();
    expect(body).toMatchObject({ success: false, code: 'RATE_LIMITED' });
    expect(body.limit).toMatchObject({
      scope: 'integration',
      name: 'noisy',
      namespace: 'team-a',
      resource: 'events',
      perSecond: 1,
      burst: 3,
      replicas: 1,
    });
    expect((body.limit as { field: string }).field).toContain('routes[].limits.eventsPerSecond');
    expect(body.message).toMatch(/events\/s limit of integration noisy/);
  });

  it('never accepts part of a batch: a batch over the limit writes no event', async () => {
    const before = sentBy('noisy');
    const batch = [1, 2, 3].map((i) => ({ source: `batch-${i}`, severity: 2 }));
    const res = await send('noisy', batch);
    expect([429]).toContain(res.status);
    await new Promise((r) => setTimeout(r, 200));
    expect(sentBy('noisy')).toBe(before);
  });

  it('does not cost another tenant anything: every request of tenant B succeeds while A is refused', async () => {
    const results = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        i % 3 === 0
          ? send('quiet').then((r) => ['quiet', r.status] as const)
          : send('noisy').then((r) => ['noisy', r.status] as const),
      ),
    );
    const quiet = results.filter(([who]) => who === 'quiet').map(([, status]) => status);
    const noisy = results.filter(([who]) => who === 'noisy').map(([, status]) => status);
    expect(quiet).toHaveLength(40);
    expect(quiet.every((s) => s === 200)).toBe(true);
    expect(noisy.filter((s) => s === 429).length).toBeGreaterThanOrEqual(75);
  });

  it('is counted in intake_events_refused_total by reason and scope', async () => {
    const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('intake_events_refused_total{') &&
          l.includes('integration="noisy"') &&
          l.includes('reason="rate_limited"') &&
          l.includes('scope="integration"'),
      );
    expect(line).toBeDefined();
    expect(Number(line?.split(' ').pop())).toBeGreaterThan(50);
  });
});

/** A raw HTTP/1.1 exchange, so that answers can be compared byte for byte. */
class RawClient {
  private readonly socket: Socket;
  private received = Buffer.alloc(0);
  private waiting: (() => void) | undefined;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.waiting?.();
    });
  }

  write(data: string): void {
    this.socket.write(data);
  }

  /** The next answer: status line and headers, and a body of Content-Length bytes. */
  async answer(): Promise<string> {
    for (;;) {
      const end = this.received.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.received.toString('latin1', 0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.received.length >= end + 4 + length) {
          const answer = this.received.toString('utf8', 0, end + 4 + length);
          this.received = this.received.subarray(end + 4 + length);
          return answer;
        }
      }
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('the two places a rate limit refuses', () => {
  it('answer byte for byte alike: before the body is read (a bucket already empty) and after it (emptied meanwhile)', async () => {
    const body = JSON.stringify({ source: 'twice-host', severity: 'warning' });
    const head = (expect100: boolean): string =>
      [
        'POST /events/webhook_twice HTTP/1.1',
        'host: 127.0.0.1',
        `authorization: ${tenantAuth('twice').authorization}`,
        'content-type: application/json',
        `content-length: ${Buffer.byteLength(body)}`,
        ...(expect100 ? ['expect: 100-continue'] : []),
        '',
        '',
      ].join('\r\n');
    // X is admitted (the bucket holds its one token) and waits with its body; Y takes the token.
    const x = new RawClient(ing.port);
    x.write(head(true));
    expect(await x.answer()).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect((await send('twice')).status).toBe(200);
    // X's body now finds the bucket empty: refused after validation, thrown to the error handler.
    x.write(body);
    const afterBody = await x.answer();
    // Z finds it empty before its body is read: refused in the authentication hook, not thrown.
    const z = new RawClient(ing.port);
    z.write(head(false) + body);
    const beforeBody = await z.answer();
    x.close();
    z.close();
    const withoutDate = (answer: string): string => answer.replace(/\r\ndate: [^\r]*/i, '');
    expect(afterBody).toMatch(/^HTTP\/1\.1 429 /);
    expect(afterBody).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(withoutDate(beforeBody)).toBe(withoutDate(afterBody));
    expect(sentBy('twice')).toBe(1);
  });
});

describe('senders that retry only server errors', () => {
  it('the alertmanager preset answers 503 with Retry-After when over its limit', async () => {
    expect((await send('am', AM_PAYLOAD)).status).toBe(200);
    const refused = await send('am', AM_PAYLOAD);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED', limit: { scope: 'integration', name: 'am' } });
  });

  it('limits.overLimitStatus: 503 makes any integration answer 503', async () => {
    expect((await send('plain-503')).status).toBe(200);
    const refused = await send('plain-503');
    expect(refused.status).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
  });
});

describe('the namespace limit', () => {
  it('holds across the integrations of a namespace, naming scope namespace', async () => {
    expect((await send('first')).status).toBe(200);
    expect((await send('second')).status).toBe(200);
    const refused = await send('first');
    expect(refused.status).toBe(429);
    expect(refused.json().limit).toMatchObject({ scope: 'namespace', name: 'team-d', perSecond: 1, burst: 2 });
    expect((refused.json().limit as { field: string }).field).toContain('limits.namespace.eventsPerSecond');
  });
});

describe('mapping CPU time per namespace', () => {
  it('refuses further mapped requests of a namespace that spent its CPU budget', async () => {
    expect((await send('costly', { any: 'thing' })).status).toBe(200);
    const refused = await send('costly', { any: 'thing' });
    expect(refused.status).toBe(429);
    expect(refused.json()).toMatchObject({
      code: 'MAPPING_CPU_LIMITED',
      limit: { scope: 'namespace', resource: 'mappingCpuMillis', name: 'team-e' },
    });
    expect((await send('quiet')).status).toBe(200);
  });
});

describe('data points per API key', () => {
  it('are refused whole over the key limit with scope apikey', async () => {
    const headers = { apikey: 'team-a_0123456789abcdef0123456789abcdef' };
    const point = { metric: 'cpu', data: 1, source: 'h' };
    expect((await post(`${ing.url}/v1/integrations/metrics`, [point, point], headers)).status).toBe(200);
    const refused = await post(`${ing.url}/v1/integrations/metrics`, point, headers);
    expect(refused.status).toBe(429);
    expect(refused.json()).toMatchObject({
      code: 'RATE_LIMITED',
      limit: { scope: 'apikey', name: 'meter', resource: 'dataPoints', perSecond: 1, burst: 2 },
    });
    const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
    expect(text).toMatch(
      /intake_datapoints_refused_total\{namespace="team-a",reason="rate_limited",scope="apikey"\} [1-9]/,
    );
  });
});
