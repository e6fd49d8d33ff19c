/** What a capture keeps of a request: no credentials, signatures, tokens or cookies; the body cut and marked. */
import { captureOf } from '../../../../ingester/inspector/capture.js';
import { RouteTable, type RouteEntry } from '../../../../ingester/routing/route-table.js';
import { tenantRoute } from '../../../support/credentials.js';

const entryOf = (extra: Record<string, unknown>): RouteEntry => {
  const { table } = RouteTable.build(
    [{ source: 't', route: tenantRoute('hooks', 'team-a', { inspect: { enabled: true }, ...extra }) as never }],
    { allowPlaintext: true },
  );
  return table.webhook('hooks') as RouteEntry;
};

const answered = (entry: RouteEntry, headers: Record<string, string>, body: string) => ({
  entry,
  receivedAtMs: Date.UTC(2026, 10, 27),
  remoteAddress: '192.0.2.7',
  status: 200,
  refusal: null,
  headers,
  body: Buffer.from(body),
  events: undefined,
});

it('removes credentials, signatures, tokens and cookies, and the route’s own signature header', () => {
  const entry = entryOf({
    credentials: [],
    authentication: {
      mode: 'signature',
      signature: { scheme: 'hmac', header: 'x-acme-check', secrets: [{ value: 'a-signing-secret-of-32-characters' }] },
    },
  });
  const c = captureOf(
    answered(
      entry,
      {
        authorization: 'Basic c2VjcmV0',
        'proxy-authorization': 'x',
        cookie: 'a=b',
        'x-hub-signature-256': 'sha256=00',
        'x-acme-check': 'deadbeef',
        'x-gitlab-token': 't',
        'x-api-key': 'k',
        'webhook-id': 'msg_1',
        'user-agent': 'tool/1.0',
      },
      '{}',
    ),
    { maxBodyBytes: 100, maxEventsBytes: 100 },
  );
  expect(c.headers).toEqual({ 'webhook-id': 'msg_1', 'user-agent': 'tool/1.0' });
  expect(entry.inspectRequests).toBe(50);
});

it('cuts a body past the cap and says so, and sorts ids by time', () => {
  const c = captureOf(answered(entryOf({}), {}, 'é'.repeat(100)), { maxBodyBytes: 10, maxEventsBytes: 100 });
  expect(c).toMatchObject({ bodyTruncated: true, bodyBytes: 200 });
  expect(Buffer.byteLength(c.body)).toBeLessThanOrEqual(10 + 3);
  const later = captureOf(
    { ...answered(entryOf({}), {}, ''), receivedAtMs: Date.UTC(2026, 10, 28) },
    {
      maxBodyBytes: 10,
      maxEventsBytes: 100,
    },
  );
  expect(later.id > c.id).toBe(true);
});

it('keeps as many events as fit, with their routing, and marks the rest left out', () => {
  const entry = entryOf({});
  const event = (i: number) => ({ id: `e${i}`, source: 'x'.repeat(40), severity: 2 }) as never;
  const c = captureOf(
    { ...answered(entry, {}, '[]'), events: [event(1), event(2), event(3)] },
    { maxBodyBytes: 10, maxEventsBytes: 160 },
  );
  expect(c.events).toHaveLength(2);
  expect(c.routing).toHaveLength(2);
  expect(c.eventsTruncated).toBe(true);
});

it('the routing table says whether any integration is inspected, through changes to single routes', () => {
  const route = (name: string, extra: Record<string, unknown> = {}) => tenantRoute(name, 'team-a', extra) as never;
  const { table } = RouteTable.build([{ source: 'p', route: route('plain') }], { allowPlaintext: true });
  expect(table.inspects).toBe(false);
  table.apply([{ source: 'i', input: { source: 'i', route: route('seen', { inspect: { enabled: true } }) } }]);
  expect(table.inspects).toBe(true);
  table.apply([{ source: 'i', input: { source: 'i', route: route('seen', { inspect: { enabled: false } }) } }]);
  expect(table.inspects).toBe(false);
});
