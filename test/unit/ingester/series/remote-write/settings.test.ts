/** The remoteWrite and exposition settings: defaults, and a clear error for each mistake. */
import { resolveSettings } from '../../../../../ingester/config.js';

const url = 'http://127.0.0.1:9090/api/v1/write';
const load = (file: Record<string, unknown>) => resolveSettings(file, {});

it('leaves remote write off and exposition on by default', () => {
  const s = load({});
  expect(s.remoteWrite).toBeUndefined();
  expect(s.exposition).toEqual({ enabled: true });
});

it('fills the defaults the issue documents', () => {
  expect(load({ remoteWrite: { url } }).remoteWrite).toEqual({
    url,
    protocol: '1.0',
    tenant: 'namespace',
    headers: {},
    batchSize: 2000,
    flushIntervalMs: 1000,
    maxQueuedSamples: 1_000_000,
    maxQueuedSamplesPerTenant: 1_000_000,
    maxQueuedBytes: 64 * 1024 * 1024,
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
