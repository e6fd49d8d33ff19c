/**
 * The direct events route (ingester/http/endpoints/events-direct.ts): which requests it leaves to
 * fastify, decided from the request line and headers alone, and, over a real socket, answers the
 * same as fastify's route (app.inject never reaches the server's request event, so it is fastify's).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { directEventsRoute, type DirectEventsOptions } from '../../../../ingester/http/endpoints/events-direct.js';
import type { IngestContext } from '../../../../ingester/http/context.js';
import { trustFunction } from '../../../../ingester/http/client-address.js';
import { basic } from '../../../support/credentials.js';
import { AuthRefusal, authThrottled, BodyBytesLimitError, unauthorized } from '../../../../ingester/core/errors.js';
import { DEMO_AUTH, harness } from '../harness.js';

describe('which requests the direct route leaves to fastify', () => {
  const entries: Record<string, { signature?: unknown }> = { demo: {}, signed: { signature: { rule: {} } } };
  const lifecycle = { ready: true, closing: false, loading: false };
  const overload = { overloaded: false };
  const watched: unknown[] = [];
  /** The route over a routing table that holds `entry` under every name, `auth` as the authenticator, and `bodies`. */
  const routeWith = (
    entry: unknown,
    auth: Record<string, unknown>,
    bodies: unknown = {},
    trust: DirectEventsOptions['trust'] = false,
  ) =>
    directEventsRoute({
      ctx: {
        routes: () => ({ webhook: () => entry }),
        lifecycle,
        limits: { bodyBytes: 1000, eventsPerRequest: 10, pointsPerRequest: 10, maxEventLoopDelayMs: 1000 },
        metrics: { requestCounts: { add: () => {} }, requestDuration: { observe: () => {} } },
        auth,
        logger: { error: () => {} },
      } as unknown as IngestContext,
      securityHeaders: {},
      bodies: bodies as DirectEventsOptions['bodies'],
      uploads: { watch: () => {} } as unknown as DirectEventsOptions['uploads'],
      overload: overload as DirectEventsOptions['overload'],
      trust,
    });
  /** A response that notes the status it is answered with. */
  const noting = (written: number[]) =>
    ({
      ...response(),
      writeHead(status: number) {
        written.push(status);
        return this;
      },
    }) as unknown as ServerResponse;
  const route = () =>
    directEventsRoute({
      ctx: {
        routes: () => ({ webhook: (name: string) => entries[name] }),
        lifecycle,
        limits: { bodyBytes: 1000, eventsPerRequest: 10, pointsPerRequest: 10, maxEventLoopDelayMs: 1000 },
        metrics: {},
        // Reached only by a request it takes: refuse it at once.
        auth: { webhook: () => Promise.reject(new Error('taken')) },
        logger: { error: () => {} },
      } as unknown as IngestContext,
      securityHeaders: {},
      bodies: {} as DirectEventsOptions['bodies'],
      uploads: { watch: (req: unknown) => watched.push(req) } as unknown as DirectEventsOptions['uploads'],
      overload: overload as DirectEventsOptions['overload'],
      trust: false,
    });
  const common = {
    method: 'POST',
    url: '/events/webhook_demo',
    headers: { 'content-type': 'application/json', 'content-length': '20', authorization: DEMO_AUTH } as Record<
      string,
      string | undefined
    >,
  };
  const request = (change: Partial<typeof common> = {}, headers: Record<string, string | undefined> = {}) =>
    ({
      ...common,
      ...change,
      headers: { ...common.headers, ...headers },
      socket: { remoteAddress: '127.0.0.1' },
      complete: false,
      on: () => {},
      once: () => {},
    }) as unknown as IncomingMessage;
  const response = () =>
    ({
      on: () => {},
      once: () => {},
      headersSent: false,
      destroyed: false,
      writeHead() {
        return this;
      },
      end: () => {},
    }) as unknown as ServerResponse;

  it('takes the common request', () => {
    watched.length = 0;
    expect(route()(request(), response())).toBe(true);
    expect(watched).toHaveLength(1);
  });

  it.each([
    ['another method', { method: 'PUT' }, {}],
    ['a query string (?dryRun)', { url: '/events/webhook_demo?dryRun=true' }, {}],
    ['an escaped name', { url: '/events/webhook_de%6Do' }, {}],
    ['a trailing slash', { url: '/events/webhook_demo/' }, {}],
    ['another path', { url: '/v1/integrations/metrics' }, {}],
    ['an unknown integration', { url: '/events/webhook_nosuch' }, {}],
    ['a signed integration', { url: '/events/webhook_signed' }, {}],
    ['a chunked body', {}, { 'content-length': undefined, 'transfer-encoding': 'chunked' }],
    ['no body', {}, { 'content-length': '0' }],
    ['a body announced over the limit', {}, { 'content-length': '1001' }],
    ['a malformed length', {}, { 'content-length': '2e1' }],
    ['Content-Encoding', {}, { 'content-encoding': 'gzip' }],
    ['Expect: 100-continue', {}, { expect: '100-continue' }],
    ['a content type that is not JSON', {}, { 'content-type': 'text/csv' }],
    ['no content type', {}, { 'content-type': undefined }],
  ])('leaves %s to fastify', (_what, change, headers) => {
    watched.length = 0;
    expect(route()(request(change, headers), response())).toBe(false);
    expect(watched).toHaveLength(0);
  });

  it.each([
    ['loading', () => (lifecycle.loading = true)],
    ['shutting down', () => (lifecycle.closing = true)],
    ['overloaded', () => (overload.overloaded = true)],
  ])('leaves every request to fastify while the ingester is %s (fastify answers 503)', (_what, set) => {
    set();
    try {
      expect(route()(request(), response())).toBe(false);
    } finally {
      lifecycle.loading = false;
      lifecycle.closing = false;
      overload.overloaded = false;
    }
  });

  it('refuses (503, retry) a request whose integration became a signed one after it was taken: its signature is never skipped', async () => {
    const written: number[] = [];
    // The table was reloaded between the look and the check: the route now has a signature.
    const signedNow = routeWith(
      {},
      { webhook: () => Promise.resolve({ entry: { signature: { rule: {} } }, signed: {} }) },
    );
    const res = noting(written);
    expect(signedNow(request(), res)).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([503]);
  });

  describe('behind a trusted proxy', () => {
    /** The address the route gave the authenticator (what the guard and the budgets key by), or undefined: not taken. */
    const addressSeen = (trustProxy: string | false, forwardedFor: string | undefined): string | undefined => {
      const seen: string[] = [];
      const served = routeWith(
        {},
        {
          webhook: (r: { ip: string }) => {
            seen.push(r.ip);
            return Promise.reject(new Error('taken'));
          },
        },
        {},
        trustFunction(trustProxy),
      );
      return served(request({}, { 'x-forwarded-for': forwardedFor }), response()) ? seen[0] : undefined;
    };

    it("takes the request and keys its sender by X-Forwarded-For as fastify's request.ip does", () => {
      expect(addressSeen('127.0.0.1', '203.0.113.7')).toBe('203.0.113.7');
      // The nearest address that is not a trusted proxy: a sender cannot choose its address by
      // adding some before the proxy's.
      expect(addressSeen('127.0.0.1, 10.0.0.0/8', '198.51.100.1, 203.0.113.7, 10.1.2.3')).toBe('203.0.113.7');
      expect(addressSeen('127.0.0.1', undefined)).toBe('127.0.0.1');
    });

    it('ignores X-Forwarded-For from a peer that is not a trusted proxy, or when none is', () => {
      expect(addressSeen('10.0.0.0/8', '203.0.113.7')).toBe('127.0.0.1');
      expect(addressSeen(false, '203.0.113.7')).toBe('127.0.0.1');
    });

    it('leaves a malformed X-Forwarded-For to fastify, which answers 400 naming the header', () => {
      expect(addressSeen('127.0.0.1', 'not-an-address')).toBeUndefined();
      expect(addressSeen('127.0.0.1', `${'203.0.113.7,'.repeat(100)}203.0.113.7`)).toBeUndefined();
    });
  });

  describe("a signature-only integration's request: answered here only when refused before its body", () => {
    const signatureOnly = { mode: 'signature', signature: { rule: {} }, name: 'gh', namespace: 'team-a' };
    /** The route with unproven senders' budgets that `fits` or not, and an authenticator answering `auth`. */
    const signedRoute = (fits: boolean, auth: () => unknown) => {
      const held = { reserved: 0, released: 0 };
      const written: number[] = [];
      const served = routeWith(
        signatureOnly,
        { webhook: auth, knownSenders: { knows: () => false } },
        {
          reserveUnauthenticated: () => {
            if (!fits) return bodyBytesLimited();
            held.reserved++;
            return () => held.released++;
          },
        },
      );
      const res = noting(written);
      return { run: () => served(request({ url: '/events/webhook_gh' }), res), held, written };
    };
    const bodyBytesLimited = () =>
      new BodyBytesLimitError(429, 'full', {
        scope: 'address',
        setting: 'limits.maxUnauthenticatedBodyBytesPerAddress',
        maxBytes: 10,
        retryAfterSeconds: 1,
      });
    const unauthenticated = () => ({ entry: signatureOnly, signed: {}, unauthenticated: true });

    it('a body that fits goes to fastify, which reserves it itself: nothing stays held', () => {
      const { run, held, written } = signedRoute(true, unauthenticated);
      expect(run()).toBe(false);
      expect(held).toEqual({ reserved: 1, released: 1 });
      expect(written).toEqual([]);
    });

    it("a body that would not fit is refused here with the budget's answer", () => {
      const { run, written } = signedRoute(false, unauthenticated);
      expect(run()).toBe(true);
      expect(written).toEqual([429]);
    });

    it("the guard's block (429, thrown) and a missing signature (401, after the floor) are answered here, before the body's reservation", async () => {
      const blocked = signedRoute(true, () => {
        throw authThrottled(60);
      });
      expect(blocked.run()).toBe(true);
      expect(blocked.written).toEqual([429]);
      expect(blocked.held.reserved).toBe(0);
      const missing = signedRoute(true, () => Promise.reject(new AuthRefusal('missing', unauthorized())));
      expect(missing.run()).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(missing.written).toEqual([401]);
      expect(missing.held.reserved).toBe(0);
    });

    it('an integration that takes Basic credentials and a signature is left to fastify whole', () => {
      const both = { ...signatureOnly, mode: 'basic+signature' };
      const route = routeWith(both, { webhook: () => Promise.reject(new Error('taken')) });
      expect(route(request({ url: '/events/webhook_gh' }), response())).toBe(false);
    });
  });
});

describe('the direct route over a real socket answers as fastify does', () => {
  const event = { source: 'web-01', severity: 'critical', class: 'cpu', type: 'high' };
  const cases: Array<[string, string, Record<string, string>, (h: Awaited<ReturnType<typeof harness>>) => void]> = [
    ['an accepted event', JSON.stringify(event), {}, () => {}],
    ['invalid JSON', '{"source":', {}, () => {}],
    ['an invalid event', JSON.stringify({ source: 'a' }), {}, () => {}],
    ['a wrong password', JSON.stringify(event), { authorization: basic('demo', 'nope') }, () => {}],
    ['a failing sink (503)', JSON.stringify(event), {}, (h) => (h.sink.fail = true)],
    [
      'a sink that only spooled',
      JSON.stringify(event),
      {},
      (h) => (h.sink.report = (n) => ({ processed: 0, cached: n })),
    ],
  ];

  it.each(cases)('%s', async (_what, body, headers, arrange) => {
    const h = await harness();
    arrange(h);
    const viaFastify = await h.app.inject({
      method: 'POST',
      url: '/events/webhook_demo',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', ...headers },
      payload: body,
    });
    const address = await h.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`${address}/events/webhook_demo`, {
        method: 'POST',
        headers: { authorization: DEMO_AUTH, 'content-type': 'application/json', ...headers },
        body,
      });
      expect(res.status).toBe(viaFastify.statusCode);
      expect(await res.text()).toBe(viaFastify.body);
      for (const name of [
        'content-type',
        'retry-after',
        'www-authenticate',
        'x-frame-options',
        'content-security-policy',
      ])
        expect(res.headers.get(name) ?? undefined).toBe(viaFastify.headers[name]?.toString());
      const counted = await h.registry.getSingleMetricAsString('intake_http_requests_total');
      expect(counted).toContain(`intake_http_requests_total{endpoint="events",status="${res.status}"} 2`);
    } finally {
      await h.app.close();
    }
  });
});
