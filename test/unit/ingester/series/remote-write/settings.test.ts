/** The remoteWrite and exposition settings: defaults, and a clear error for each mistake. */
import { resolveSettings } from '../../../../../ingester/config.js';

const url = 'http://127.0.0.1:9090/api/v1/write';
const load = (file: Record<string, unknown>) => resolveSettings(file, {});

it('leaves remote write off and exposition on by default', () => {
  const s = load({});
  expect(s.remoteWrite).toBeUndefined();
  expect(s.exposition).toEqual({ enabled: true });
});

it('fills the defaults docs/remote-write.md documents', () => {
  expect(load({ remoteWrite: { url } }).remoteWrite).toEqual({
    url,
    protocol: '1.0',
    tenant: 'namespace',
    headers: {},
    batchSize: 2000,
    flushIntervalMs: 1000,
    maxQueuedSamples: 1_000_000,
    maxQueuedBytes: 64 * 1024 * 1024,
    maxQueuedBytesPerTenant: 8 * 1024 * 1024,
    maxSampleAgeMs: 45 * 60_000,
    maxInFlightPerTenant: 2,
    timeoutMs: 30_000,
    minBackoffMs: 100,
    maxBackoffMs: 10_000,
  });
});

it.each([
  [{ remoteWrite: { url, protocol: '3' } }, /remoteWrite\/protocol must be equal to one of the allowed values/],
  [{ remoteWrite: { url: 'ftp://x' } }, /remoteWrite\/url must match pattern/],
  [{ remoteWrite: {} }, /remoteWrite must have required property 'url'/],
  [{ remoteWrite: { url: 'http://u:p@host/api/v1/write' } }, /must not hold credentials/],
  [
    { remoteWrite: { url, headers: { 'Content-Type': 'x' } } },
    /remoteWrite.headers.Content-Type is set by intake itself/,
  ],
  [
    { remoteWrite: { url, tenantHeader: 'X-Scope-OrgID', headers: { 'x-scope-orgid': 'x' } } },
    /headers.x-scope-orgid is set by intake itself/,
  ],
  [
    { remoteWrite: { url, basicAuth: { username: 'u', passwordFile: '/p' }, bearerTokenFile: '/t' } },
    /basicAuth or bearerTokenFile, not both/,
  ],
  [{ remoteWrite: { url: 'https://x/w', tls: { certFile: '/c' } } }, /needs both certFile and keyFile/],
  [{ remoteWrite: { url, tls: { caFile: '/ca' } } }, /remoteWrite.tls is set but remoteWrite.url is not https/],
  [{ remoteWrite: { url, batchSize: 0 } }, /remoteWrite\/batchSize must be >= 1/],
  [{ remoteWrite: { url, tenant: 'label' } }, /remoteWrite\/tenant must be equal to one of the allowed values/],
  [{ exposition: { enabled: false } }, /exposition.enabled is false and remoteWrite is not set/],
  [
    { remoteWrite: { url, maxQueuedBytes: 1 << 20, maxQueuedBytesPerTenant: 2 << 20 } },
    /maxQueuedBytesPerTenant must not exceed remoteWrite.maxQueuedBytes/,
  ],
  [{ remoteWrite: { url, maxQueuedBytesPerTenant: 1000 } }, /remoteWrite\/maxQueuedBytesPerTenant must be >= 65536/],
])('refuses %j', (file, message) => {
  expect(() => load(file)).toThrow(message);
});

it('accepts protocol 2.0', () => {
  expect(load({ remoteWrite: { url, protocol: '2.0' } }).remoteWrite?.protocol).toBe('2.0');
});

it('accepts remote write with exposition off', () => {
  const s = load({
    remoteWrite: { url, tenantHeader: 'X-Scope-OrgID', headers: { 'X-Extra': '1' } },
    exposition: { enabled: false },
  });
  expect(s.exposition.enabled).toBe(false);
  expect(s.remoteWrite?.tenantHeader).toBe('X-Scope-OrgID');
});

it("gives a namespace an eighth of the queue's bytes, and never less than 64 KiB", () => {
  expect(load({ remoteWrite: { url, maxQueuedBytes: 16 << 20 } }).remoteWrite?.maxQueuedBytesPerTenant).toBe(2 << 20);
  expect(load({ remoteWrite: { url, maxQueuedBytes: 65536 } }).remoteWrite?.maxQueuedBytesPerTenant).toBe(65536);
});

it('still reads the deprecated maxQueuedSamplesPerTenant (the writer applies it, with a warning)', () => {
  expect(load({ remoteWrite: { url, maxQueuedSamplesPerTenant: 5000 } }).remoteWrite?.maxQueuedSamplesPerTenant).toBe(
    5000,
  );
});
