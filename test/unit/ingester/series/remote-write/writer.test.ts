/** The remote writer against a recording receiver on loopback: the real HTTP client, real encoding. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import type { DataPoint } from '../../../../../ingester/series/data-points.js';
import { resolveRemoteWrite, type RemoteWriteFile } from '../../../../../ingester/series/remote-write/settings.js';
import { RemoteWriter } from '../../../../../ingester/series/remote-write/writer.js';
import { BATCH_BYTES } from '../../../../../ingester/series/remote-write/lane.js';
import type { QueueFullError } from '../../../../../ingester/core/errors.js';
import { ROOT } from '../../../../support/paths.js';
import { waitFor } from '../../../../support/waiting.js';
import { flatten, startRecordingReceiver, type RecordingReceiver } from '../../../../e2e/support/recording-receiver.js';

let receiver: RecordingReceiver;
let writer: RemoteWriter | undefined;
let registry: Registry;

beforeEach(async () => {
  receiver = await startRecordingReceiver();
  registry = new Registry();
});
afterEach(async () => {
  await writer?.close(Date.now());
  writer = undefined;
  await receiver.close();
});

function start(overrides: Partial<RemoteWriteFile> = {}): RemoteWriter {
  const settings = resolveRemoteWrite({
    url: receiver.url,
    batchSize: 100,
    flushIntervalMs: 20,
    minBackoffMs: 10,
    maxBackoffMs: 50,
    ...overrides,
  });
  const rejected = new Counter({
    name: 'rejected_total',
    help: 'h',
    labelNames: ['namespace', 'reason'],
    registers: [registry],
  });
  writer = new RemoteWriter(settings, { registry, logger: pino({ level: 'silent' }), seriesTtlMs: 60_000, rejected });
  return writer;
}

const NOW = Date.now();
const point = (value: number, extra: Partial<DataPoint> = {}): DataPoint => ({
  metric: 'cpu.load',
  value,
  source: 'host-1',
  key: '',
  tags: {},
  ...extra,
});
const metric = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
  const m = (await registry.getSingleMetric(name)?.get())?.values.find((v) =>
    Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  );
  return m?.value ?? 0;
};

it('sends Remote Write 1.0 headers and a snappy-compressed WriteRequest', async () => {
  start()
    .admit('team-a', [point(1, { timeMs: NOW })])
    .commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  const r = receiver.requests[0]!;
  expect(r.method).toBe('POST');
  expect(r.headers['content-encoding']).toBe('snappy');
  expect(r.headers['content-type']).toBe('application/x-protobuf');
  expect(r.headers['x-prometheus-remote-write-version']).toBe('0.1.0');
  expect(r.headers['user-agent']).toBe(
    `intake/${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}`,
  );
  expect(flatten(r.request)).toEqual([{ labels: expect.any(Array), value: 1, ts: NOW }]);
});

it('writes labels sorted by name, with __name__, the namespace from the key, and no empty values', async () => {
  start()
    .admit('team-a', [
      point(2, { timeMs: NOW, key: '', tags: { Zone: 'eu', env: 'prod', empty: '', namespace: 'spoofed' } }),
    ])
    .commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  expect(flatten(receiver.requests[0]!.request)[0]!.labels).toEqual([
    ['Zone', 'eu'],
    ['__name__', 'cpu_load'],
    ['env', 'prod'],
    ['namespace', 'team-a'],
    ['source', 'host-1'],
    ['tag_namespace', 'spoofed'],
  ]);
});

it('sends each tenant in requests of its own, with the tenant header', async () => {
  const w = start({ tenantHeader: 'X-Scope-OrgID' });
  w.admit('team-a', [point(1, { timeMs: NOW }), point(2, { timeMs: NOW, source: 'host-2' })]).commit();
  w.admit('team-b', [point(3, { timeMs: NOW })]).commit();
  await waitFor('three samples', async () => receiver.requests.flatMap((r) => flatten(r.request)).length === 3);
  for (const r of receiver.requests) {
    const namespaces = new Set(flatten(r.request).map((s) => Object.fromEntries(s.labels).namespace));
    expect([...namespaces]).toEqual([r.headers['x-scope-orgid']]);
  }
  expect(new Set(receiver.requests.map((r) => r.headers['x-scope-orgid']))).toEqual(new Set(['team-a', 'team-b']));
});

it('retries a 5xx until the receiver takes the batch', async () => {
  receiver.script.push({ status: 500, body: 'busy' }, { status: 503 });
  start()
    .admit('team-a', [point(1, { timeMs: NOW })])
    .commit();
  await waitFor('three attempts', async () => receiver.requests.length === 3);
  expect(receiver.requests.map((r) => flatten(r.request))).toEqual([
    flatten(receiver.requests[0]!.request),
    flatten(receiver.requests[0]!.request),
    flatten(receiver.requests[0]!.request),
  ]);
  await waitFor('sent counted', async () => (await metric('intake_remote_write_samples_sent_total')) === 1);
  expect(await metric('intake_remote_write_samples_retried_total')).toBe(2);
  expect(receiver.requests[2]!.headers['retry-attempt']).toBe('2');
});

it('waits as long as Retry-After says before retrying a 429', async () => {
  receiver.script.push({ status: 429, headers: { 'retry-after': '1' } });
  start()
    .admit('team-a', [point(1, { timeMs: NOW })])
    .commit();
  await waitFor('the retry', async () => receiver.requests.length === 2, 5000);
  // The backoff alone would retry within 50 ms.
  expect(receiver.requests[1]!.atMs - receiver.requests[0]!.atMs).toBeGreaterThanOrEqual(900);
});

it('drops a batch the receiver refuses with 400, without retrying it', async () => {
  receiver.script.push({ status: 400, body: 'out of bounds' });
  const w = start();
  w.admit('team-a', [point(1, { timeMs: NOW })]).commit();
  await waitFor(
    'dropped counted',
    async () => (await metric('intake_remote_write_samples_dropped_total', { reason: 'rejected' })) === 1,
  );
  w.admit('team-a', [point(2, { timeMs: NOW + 1 })]).commit();
  await waitFor('the next batch', async () => receiver.requests.length === 2);
  expect(flatten(receiver.requests[1]!.request).map((s) => s.value)).toEqual([2]);
  expect(await metric('intake_remote_write_samples_retried_total')).toBe(0);
});

it("sends a series' points oldest first and drops a point older than one already sent", async () => {
  const w = start();
  w.admit('team-a', [
    point(3, { timeMs: NOW + 3 }),
    point(1, { timeMs: NOW + 1 }),
    point(2, { timeMs: NOW + 2 }),
  ]).commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  w.admit('team-a', [point(0, { timeMs: NOW })]).commit();
  await waitFor(
    'dropped counted',
    async () => (await metric('intake_remote_write_samples_dropped_total', { reason: 'out_of_order' })) === 1,
  );
  expect(flatten(receiver.requests[0]!.request).map((s) => [s.ts - NOW, s.value])).toEqual([
    [1, 1],
    [2, 2],
    [3, 3],
  ]);
  // Settled once the answer is read, a moment after the receiver recorded the request.
  await waitFor('settled', async () => w.queuedSamples === 0);
});

it('keeps the later value of two points for one series at the same millisecond', async () => {
  start()
    .admit('team-a', [point(1, { timeMs: NOW }), point(2, { timeMs: NOW })])
    .commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  expect(flatten(receiver.requests[0]!.request).map((s) => s.value)).toEqual([2]);
});

it('stamps a point without time with the time it was received', async () => {
  const before = Date.now();
  start({ flushIntervalMs: 300 })
    .admit('team-a', [point(1)])
    .commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  const ts = flatten(receiver.requests[0]!.request)[0]!.ts;
  expect(ts).toBeGreaterThanOrEqual(before);
  // Not the flush time, 300 ms later.
  expect(ts).toBeLessThan(before + 250);
});

it('answers 503 with Retry-After and queues nothing of a request that would overflow the queue', async () => {
  for (let i = 0; i < 20; i++) receiver.script.push({ status: 503 });
  const w = start({ maxQueuedSamples: 3, batchSize: 2 });
  w.admit('team-a', [point(1, { timeMs: NOW }), point(2, { timeMs: NOW + 1 })]).commit();
  expect(() => w.admit('team-a', [point(3, { timeMs: NOW + 2 }), point(4, { timeMs: NOW + 3 })])).toThrow(
    expect.objectContaining({ statusCode: 503, headers: { 'retry-after': '5' } }),
  );
  expect(w.queuedSamples).toBe(2);
});

it('answers 503 for a tenant past its own share of the queue, while other tenants still get in', async () => {
  for (let i = 0; i < 20; i++) receiver.script.push({ status: 503 });
  const w = start({ maxQueuedSamples: 10, maxQueuedSamplesPerTenant: 2, batchSize: 2 });
  w.admit('team-a', [point(1, { timeMs: NOW }), point(2, { timeMs: NOW + 1 })]).commit();
  expect(() => w.admit('team-a', [point(3, { timeMs: NOW + 2 })])).toThrow(
    expect.objectContaining({ statusCode: 503, message: expect.stringContaining('namespace team-a') }),
  );
  expect(() => w.admit('team-b', [point(3, { timeMs: NOW + 2 })]).commit()).not.toThrow();
  expect(w.queuedSamples).toBe(3);
});

it('sends Remote Write 2.0 with a symbol table, label references and gauge metadata', async () => {
  receiver.script.push({ status: 204, headers: { 'x-prometheus-remote-write-samples-written': '1' } });
  start({ protocol: '2.0' })
    .admit('team-a', [point(1.5, { timeMs: NOW, description: 'CPU load', unit: 'ratio' })])
    .commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  const r = receiver.requests[0]!;
  expect(r.headers['content-type']).toBe('application/x-protobuf;proto=io.prometheus.write.v2.Request');
  expect(r.headers['x-prometheus-remote-write-version']).toBe('2.0.0');
  const { symbols, timeseries } = r.requestV2!;
  expect(symbols[0]).toBe('');
  const series = timeseries[0]!;
  const labels = [];
  for (let i = 0; i < series.labelsRefs.length; i += 2)
    labels.push([symbols[series.labelsRefs[i]!], symbols[series.labelsRefs[i + 1]!]]);
  expect(labels).toEqual([
    ['__name__', 'cpu_load'],
    ['namespace', 'team-a'],
    ['source', 'host-1'],
  ]);
  expect(series.samples.map((s) => [s.value, Number(s.timestamp)])).toEqual([[1.5, NOW]]);
  expect(series.metadata).toMatchObject({
    type: 2,
    helpRef: symbols.indexOf('CPU load'),
    unitRef: symbols.indexOf('ratio'),
  });
  await waitFor('sent counted', async () => (await metric('intake_remote_write_samples_sent_total')) === 1);
});

it.each([
  ['415', { status: 415 }],
  ['a 2xx without the *-Written headers (a 1.x receiver)', { status: 204 }],
])('falls back to 1.0 for good when a 2.0 request gets %s', async (_what, answer) => {
  receiver.script.push(answer);
  const w = start({ protocol: '2.0' });
  w.admit('team-a', [point(1, { timeMs: NOW })]).commit();
  await waitFor('the 1.0 re-send', async () => receiver.requests.length === 2);
  expect(receiver.requests.map((r) => r.headers['x-prometheus-remote-write-version'])).toEqual(['2.0.0', '0.1.0']);
  expect(flatten(receiver.requests[1]!.request).map((s) => [s.value, s.ts])).toEqual([[1, NOW]]);
  w.admit('team-a', [point(2, { timeMs: NOW + 1 })]).commit();
  await waitFor('the next batch', async () => receiver.requests.length === 3);
  expect(receiver.requests[2]!.headers['x-prometheus-remote-write-version']).toBe('0.1.0');
});

it('sends what is queued when closed', async () => {
  const w = start({ flushIntervalMs: 60_000 });
  w.admit('team-a', [point(1, { timeMs: NOW })]).commit();
  await w.close(Date.now() + 5000);
  writer = undefined;
  expect(receiver.requests).toHaveLength(1);
});

it('counts what is still queued at the shutdown deadline as dropped (reason shutdown)', async () => {
  for (let i = 0; i < 100; i++) receiver.script.push({ status: 503 });
  const w = start();
  w.admit('team-a', [point(1, { timeMs: NOW }), point(2, { timeMs: NOW + 1 })]).commit();
  await w.close(Date.now() + 300);
  writer = undefined;
  expect(await metric('intake_remote_write_samples_dropped_total', { reason: 'shutdown' })).toBe(2);
  expect(receiver.requests.length).toBeGreaterThan(1);
});

it.each([
  [
    'basicAuth',
    (dir: string) => ({ basicAuth: { username: 'intake', passwordFile: join(dir, 'secret') } }),
    `Basic ${Buffer.from('intake:s3cret').toString('base64')}`,
  ],
  ['bearerTokenFile', (dir: string) => ({ bearerTokenFile: join(dir, 'secret') }), 'Bearer s3cret'],
])('sends credentials read from a file (%s), and extra headers', async (_what, settings, expected) => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-rw-'));
  writeFileSync(join(dir, 'secret'), 's3cret\n');
  start({ ...settings(dir), headers: { 'X-Extra': 'yes' } })
    .admit('team-a', [point(1, { timeMs: NOW })])
    .commit();
  await waitFor('a request', async () => receiver.requests.length === 1);
  expect(receiver.requests[0]!.headers.authorization).toBe(expected);
  expect(receiver.requests[0]!.headers['x-extra']).toBe('yes');
});

it('verifies an HTTPS receiver with the CA from tls.caFile', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intake-rw-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=receiver',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  await receiver.close();
  receiver = await startRecordingReceiver({
    cert: readFileSync(join(dir, 'cert.pem')),
    key: readFileSync(join(dir, 'key.pem')),
  });
  start({ tls: { caFile: join(dir, 'cert.pem') } })
    .admit('team-a', [point(1, { timeMs: NOW })])
    .commit();
  await waitFor('a request over TLS', async () => receiver.requests.length === 1);
  expect(receiver.url).toMatch(/^https:/);
});

// ~1 KB of labels per point: 40 points reserve about 47 KB.
const heavy = (i: number) => point(i, { timeMs: NOW, source: `host-${i}`, tags: { blob: 'x'.repeat(1000) } });
const heavies = (from: number, n = 40) => Array.from({ length: n }, (_, i) => heavy(from + i));

it("answers 503 naming the limit to a namespace past its share of the queue's bytes, takes another namespace's points, and takes the first again once its share is sent", async () => {
  for (let i = 0; i < 3; i++) receiver.script.push({ status: 503 });
  const w = start({ maxQueuedBytes: 4 * 65536, maxQueuedBytesPerTenant: 65536, batchSize: 1000, flushIntervalMs: 50 });
  w.admit('team-a', heavies(0)).commit();
  expect(w.shareOf('team-a').bytes).toBeGreaterThan(40 * 1000);
  let refusal: unknown;
  try {
    w.admit('team-a', heavies(100));
  } catch (err) {
    refusal = err;
  }
  expect(refusal).toMatchObject({
    statusCode: 503,
    code: 'REMOTE_WRITE_QUEUE_FULL',
    headers: { 'retry-after': '5' },
    message: expect.stringContaining("namespace team-a's share of the remote write queue is full"),
  });
  expect((refusal as QueueFullError).toBody().limit).toEqual({
    scope: 'namespace',
    namespace: 'team-a',
    resource: 'bytes',
    queued: w.shareOf('team-a').bytes,
    max: 65536,
    requested: expect.any(Number),
    retryAfterSeconds: 5,
    field: 'remoteWrite.maxQueuedBytesPerTenant',
  });
  expect(w.queuedSamples).toBe(40);
  // Another namespace has a share of its own.
  expect(() => w.admit('team-b', heavies(200)).commit()).not.toThrow();
  // The receiver takes the batches after three 503s: the shares empty.
  await waitFor('sent', async () => w.queuedSamples === 0);
  expect(w.queuedByteCount).toBe(0);
  expect(w.shareOf('team-a')).toEqual({ samples: 0, bytes: 0 });
  expect(() => w.admit('team-a', heavies(100)).commit()).not.toThrow();
});

it('answers 503 to every namespace once the queue as a whole is full, each still under its share', () => {
  for (let i = 0; i < 20; i++) receiver.script.push({ status: 503 });
  const w = start({ maxQueuedBytes: 131072, maxQueuedBytesPerTenant: 65536, batchSize: 1000, flushIntervalMs: 60_000 });
  w.admit('team-a', heavies(0)).commit();
  w.admit('team-b', heavies(100)).commit();
  for (const tenant of ['team-c', 'team-d'])
    expect(() => w.admit(tenant, heavies(300))).toThrow(
      expect.objectContaining({
        statusCode: 503,
        message: expect.stringContaining('the remote write queue is full for every namespace'),
        limit: expect.objectContaining({ scope: 'replica', field: 'remoteWrite.maxQueuedBytes', max: 131072 }),
      }),
    );
});

it('charges a cut batch what it holds, its compressed request, after reserving an upper bound for its points', async () => {
  const bodies = new Map<Buffer, number>();
  const settings = resolveRemoteWrite({
    url: receiver.url,
    batchSize: 40,
    flushIntervalMs: 60_000,
    maxInFlightPerTenant: 1, // one lane: the 40th point cuts the batch
  });
  writer = new RemoteWriter(settings, {
    registry,
    logger: pino({ level: 'silent' }),
    seriesTtlMs: 60_000,
    rejected: new Counter({ name: 'r_total', help: 'h', labelNames: ['namespace', 'reason'], registers: [registry] }),
    send: async (body) => {
      bodies.set(body, body.length);
      return { kind: 'retry', reason: 'http_500', status: 500, error: 'failing' };
    },
  });
  const w = writer;
  const admitted = w.admit('team-a', heavies(0, 39));
  admitted.commit();
  // Being built: the upper bound, more than the labels and samples themselves.
  const reserved = w.queuedByteCount;
  expect(reserved).toBeGreaterThan(39 * 1000);
  w.admit('team-a', heavies(39, 1)).commit(); // the 40th point cuts the batch
  await waitFor('sent once', async () => bodies.size === 1);
  const [held] = [...bodies.values()];
  expect(w.queuedByteCount).toBe((held as number) + BATCH_BYTES);
  expect(w.shareOf('team-a')).toEqual({ samples: 40, bytes: (held as number) + BATCH_BYTES });
  expect(w.queuedByteCount).toBeLessThan(reserved);
});

it("answers 413 for a request that would not fit even in a namespace's empty share (a 503 would be retried for ever)", () => {
  const w = start({ maxQueuedBytes: 4 * 65536, maxQueuedBytesPerTenant: 65536 });
  expect(() => w.admit('team-a', heavies(0, 80))).toThrow(
    expect.objectContaining({
      statusCode: 413,
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.stringContaining('remoteWrite.maxQueuedBytesPerTenant 65536'),
    }),
  );
  expect(w.queuedSamples).toBe(0);
});

it('refuses a request with a point older than maxSampleAgeMs with 400 naming each such point and time, and queues nothing', () => {
  const w = start({ maxSampleAgeMs: 3_600_000 });
  const points = [
    point(1, { timeMs: Date.now() }),
    point(2, { timeMs: Date.now() - 2 * 3_600_000, source: 'h2' }),
    point(3, { source: 'h3' }),
  ];
  expect(() => w.admit('team-a', points)).toThrow(
    expect.objectContaining({
      statusCode: 400,
      code: 'INVALID_BODY',
      fieldErrors: [
        {
          index: 1,
          field: 'time',
          message: expect.stringMatching(/60 minutes in the past \(remoteWrite\.maxSampleAge\)/),
        },
      ],
    }),
  );
  expect(w.queuedSamples).toBe(0);
});

it('warns at start that maxQueuedSamplesPerTenant is deprecated (and still applies it, above)', () => {
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
  const settings = resolveRemoteWrite({ url: receiver.url, maxQueuedSamplesPerTenant: 5000 });
  const rejected = new Counter({
    name: 'w_total',
    help: 'h',
    labelNames: ['namespace', 'reason'],
    registers: [registry],
  });
  writer = new RemoteWriter(settings, { registry, logger, seriesTtlMs: 60_000, rejected });
  expect(lines.map((l) => JSON.parse(l) as { msg: string })).toEqual([
    expect.objectContaining({ msg: expect.stringContaining('maxQueuedSamplesPerTenant is deprecated') }),
  ]);
});

it("exposes each namespace's queued bytes and its share", async () => {
  for (let i = 0; i < 5; i++) receiver.script.push({ status: 503 });
  const w = start({ maxQueuedBytes: 4 * 65536, maxQueuedBytesPerTenant: 65536 });
  w.admit('team-a', heavies(0, 10)).commit();
  expect(await metric('intake_remote_write_namespace_queued_bytes', { namespace: 'team-a' })).toBe(
    w.shareOf('team-a').bytes,
  );
  expect(await metric('intake_remote_write_namespace_queue_capacity_bytes')).toBe(65536);
  expect(await metric('intake_remote_write_queued_bytes')).toBe(w.queuedByteCount);
});
