import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveSettings } from '../../../../ingester/config.js';
import { claimTimeoutMs, resolveDestinations } from '../../../../ingester/destinations/settings.js';
import { loadRoutesFromFile } from '../../../../ingester/routing/file-source.js';
import { RouteTable } from '../../../../ingester/routing/route-table.js';
import type { Route } from '../../../../api/route.js';

const am = { name: 'alertmanager', default: true, alertmanager: { urls: ['http://127.0.0.1:9093/'] } };
const tickets = {
  name: 'tickets',
  http: {
    url: 'https://tickets.example.com/hooks/intake',
    headers: { 'X-Team': 'sre' },
    timeout: '5s',
    batchSize: 100,
  },
};

describe('destination settings', () => {
  it('refuses an Alertmanager destination whose namespace share exceeds its whole, naming both fields; a default share fits a smaller whole', () => {
    const with_ = (alertmanager: Record<string, unknown>) => ({
      ...am,
      alertmanager: { ...am.alertmanager, ...alertmanager },
    });
    expect(() => resolveDestinations([with_({ maxAlerts: 100, maxAlertsPerNamespace: 101 })])).toThrow(
      /alertmanager\.maxAlertsPerNamespace \(101\) must not exceed .*alertmanager\.maxAlerts \(100\)/,
    );
    expect(() => resolveDestinations([with_({ maxAlertsPerNamespace: 50_001 })])).toThrow(/maxAlerts \(50000\)/);
    const [fitted] = resolveDestinations([with_({ maxAlerts: 500 })]);
    expect(fitted?.kind === 'alertmanager' && fitted.alertmanager.maxAlertsPerNamespace).toBe(500);
    const [equal] = resolveDestinations([with_({ maxAlerts: 100, maxAlertsPerNamespace: 100 })]);
    expect(equal?.kind === 'alertmanager' && equal.alertmanager.maxAlertsPerNamespace).toBe(100);
  });

  it('gives every destination a circuit breaker by default, and a rate limit only when asked', () => {
    const [t] = resolveDestinations([tickets]);
    expect(t?.protection).toEqual({
      circuitBreaker: {
        consecutiveFailures: 5,
        failureRatio: 0.5,
        windowMs: 60_000,
        minRequests: 20,
        openForMs: 30_000,
      },
      autoPause: { afterMs: 24 * 3600_000 },
    });
    const [limited] = resolveDestinations([
      {
        ...tickets,
        circuitBreaker: { enabled: false },
        rateLimit: { eventsPerSecond: 2.5 },
        autoPause: { enabled: false },
      },
    ]);
    expect(limited?.protection).toEqual({ rateLimit: { eventsPerSecond: 2.5, burst: 3 } });
    const [tuned] = resolveDestinations([
      { ...tickets, circuitBreaker: { openFor: '2m', window: '30s' }, rateLimit: { eventsPerSecond: 100, burst: 20 } },
    ]);
    expect(tuned?.protection).toMatchObject({
      circuitBreaker: { openForMs: 120_000, windowMs: 30_000 },
      rateLimit: { eventsPerSecond: 100, burst: 20 },
    });
  });

  it.each([
    [{ circuitBreaker: { openFor: '30' } }, /circuitBreaker\/openFor/],
    [{ circuitBreaker: { failureRatio: 1.5 } }, /circuitBreaker\/failureRatio/],
    [{ circuitBreaker: { consecutiveFailures: 0, failureRatio: 1 } }, /never opens.*enabled: false/],
    [{ circuitBreaker: { openFor: '0s' } }, /circuitBreaker\.openFor must be longer than 0/],
    [{ rateLimit: { burst: 5 } }, /rateLimit.*eventsPerSecond/],
    [{ rateLimit: { eventsPerSecond: 0 } }, /rateLimit\/eventsPerSecond/],
    [{ autoPause: { after: '1d' } }, /autoPause\/after/],
    [{ autoPause: { after: '0s' } }, /autoPause\.after must be longer than 0/],
    [{ suspend: 'yes' }, /suspend/],
  ])('refuses the protection settings %j in the settings file, naming the field', (protection, message) => {
    expect(() =>
      resolveSettings({ destinations: [{ ...tickets, ...protection }], spool: { path: '/tmp/x' } } as never, {}),
    ).toThrow(message);
  });

  it('reads suspend (false when not given) and the auto-pause window', () => {
    const [t, paused] = resolveDestinations([
      { ...tickets, autoPause: { after: '90s' } },
      { ...tickets, name: 'paused', suspend: true },
    ]);
    expect(t?.suspend).toBe(false);
    expect(t?.protection.autoPause).toEqual({ afterMs: 90_000 });
    expect(paused?.suspend).toBe(true);
  });

  it('applies the defaults', () => {
    const [a, t] = resolveDestinations([am, tickets]);
    expect(a).toMatchObject({
      kind: 'alertmanager',
      default: true,
      alertmanager: {
        urls: ['http://127.0.0.1:9093'],
        resendIntervalMs: 60_000,
        resolvedRetentionMs: 900_000,
        timeoutMs: 10_000,
      },
      // Thirty-two posts of 256 alerts in flight (eight on the wire, the rest ready behind them).
      delivery: { maxInFlight: 8192 },
    });
    expect(t).toMatchObject({
      kind: 'http',
      default: false,
      http: { timeoutMs: 5000, batchSize: 100, headers: { 'X-Team': 'sre' } },
      // Eight requests of 100 events in flight; their bytes bounded.
      delivery: { maxAttempts: 10, backoffMinMs: 1000, backoffMaxMs: 300_000, maxInFlight: 800 },
    });
    expect(t?.delivery.maxInFlightBytes).toBe(16 * 1024 * 1024);
  });

  it('keeps eight requests in flight by default for a batching HTTP destination, at least 256 events, at most 10,000', () => {
    const withBatch = (batchSize?: number, maxInFlight?: number) =>
      resolveDestinations([
        {
          name: 'x',
          http: { url: 'https://example.com/', ...(batchSize ? { batchSize } : {}) },
          ...(maxInFlight ? { delivery: { maxInFlight } } : {}),
        },
      ])[0]?.delivery.maxInFlight;
    expect([withBatch(), withBatch(1), withBatch(32), withBatch(100), withBatch(1000)]).toEqual([
      256, 256, 256, 800, 8000,
    ]);
    expect(withBatch(100, 50)).toBe(50);
  });

  it('takes maxInFlightBytes, at least 64 KiB', () => {
    const [t] = resolveDestinations([{ ...tickets, delivery: { maxInFlightBytes: 1 << 20 } }]);
    expect(t?.delivery.maxInFlightBytes).toBe(1 << 20);
    expect(() =>
      resolveSettings(
        { destinations: [{ ...tickets, delivery: { maxInFlightBytes: 100 } }], spool: { path: '/tmp/x' } },
        {},
      ),
    ).toThrow(/maxInFlightBytes/);
  });

  it.each([
    [[am, am], /used twice/],
    [[{ name: 'x' }], /exactly one of alertmanager or http/],
    [[{ ...tickets, alertmanager: am.alertmanager }], /exactly one/],
    [[{ name: 'x', http: { url: 'https://u:p@example.com/' } }], /not in the URL/],
    [
      [{ name: 'x', http: { url: 'https://example.com/', headers: { Authorization: 'Bearer x' } } }],
      /Authorization is set by intake/,
    ],
    [[{ ...tickets, delivery: { backoffMin: '10s', backoffMax: '1s' } }], /backoffMax must be at least/],
    [
      [
        {
          name: 'x',
          http: {
            url: 'https://example.com/',
            basicAuth: { username: 'u', passwordFile: '/p' },
            bearerTokenFile: '/t',
          },
        },
      ],
      /not both/,
    ],
  ])('refuses %j', (destinations, message) => {
    expect(() => resolveDestinations(destinations as never)).toThrow(message);
  });

  it('needs a durable queue: the bus or the spool', () => {
    expect(() => resolveSettings({ destinations: [am] }, {})).toThrow(/configure sinks.jetstream \(the bus\) or spool/);
    expect(resolveSettings({ destinations: [am], spool: { path: '/tmp/x' } }, {}).spool?.path).toBe('/tmp/x');
    // A spool alone holds the dead letters (mapping failures) of a standalone ingester.
    expect(resolveSettings({ spool: { path: '/tmp/x' } }, {}).spool?.path).toBe('/tmp/x');
  });

  it('refuses unknown keys and bad names in the file', () => {
    expect(() => resolveSettings({ destinations: [{ ...am, resend: '1s' }], spool: { path: '/tmp/x' } }, {})).toThrow(
      /resend/,
    );
    expect(() =>
      resolveSettings({ destinations: [{ ...am, name: 'Bad_Name' }], spool: { path: '/tmp/x' } }, {}),
    ).toThrow(/name/);
  });

  it('claims an event longer than one delivery with its timeout', () => {
    const [a, t] = resolveDestinations([am, { ...tickets, http: { ...tickets.http, timeout: '1s' } }]);
    expect(claimTimeoutMs(a as never)).toBe(41_000);
    expect(claimTimeoutMs(t as never)).toBe(5000);
  });
});

describe('integrations naming destinations', () => {
  const route = (destinations?: string[]): Route => ({
    apiVersion: 'intake.dev/v1alpha1',
    kind: 'WebhookIntegration',
    name: 'demo',
    namespace: 'default',
    credentials: [{ username: 'demo', secret: { plain: 'pw' } }],
    ...(destinations ? { destinations } : {}),
  });
  const configured = resolveDestinations([am, tickets]);

  it('get the defaults when they name none, else exactly what they name', () => {
    expect(
      RouteTable.build([{ source: 'a', route: route() }], {
        allowPlaintext: true,
        destinations: configured,
      }).table.webhook('demo')?.destinations,
    ).toEqual(['alertmanager']);
    expect(
      RouteTable.build([{ source: 'a', route: route(['tickets']) }], {
        allowPlaintext: true,
        destinations: configured,
      }).table.webhook('demo')?.destinations,
    ).toEqual(['tickets']);
  });

  it('are skipped (Kubernetes mode) when they name an unknown destination', () => {
    const { table, skipped } = RouteTable.build([{ source: 'secret/x', route: route(['pager']) }], {
      allowPlaintext: true,
      destinations: configured,
    });
    expect(table.webhook('demo')).toBeUndefined();
    expect(skipped).toEqual([
      { source: 'secret/x', reason: 'unknown destination pager (configured: alertmanager, tickets)' },
    ]);
  });

  it('stop a standalone start with a clear error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'intake-dest-'));
    try {
      const file = join(dir, 'intake.yaml');
      writeFileSync(file, JSON.stringify({ routes: [route(['pager'])] }));
      expect(() => loadRoutesFromFile(file, configured)).toThrow(
        /routes\[0\] \(demo\): destinations: unknown destination pager \(configured: alertmanager, tickets\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
