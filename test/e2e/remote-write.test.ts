/**
 * Remote write through the built ingester to a real Prometheus (Debian's 2.42 as the receiver,
 * out-of-order window 30m), and to a recording receiver of our own for the wire details.
 */
import { jest } from '@jest/globals';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/waiting.js';
import { API_KEY, post, startIngester, type RunningIngester } from './support/ingester.js';
import { query, startPrometheus, type Prometheus } from './support/prometheus.js';
import { flatten, startRecordingReceiver } from './support/recording-receiver.js';

jest.setTimeout(60_000);

const TEAM_B_KEY = 'teamb_0123456789abcdef0123456789abcdef';
const teamB = {
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'ApiKey',
  name: 'team-b',
  namespace: 'team-b',
  credentials: [{ username: 'team-b', secret: { plain: TEAM_B_KEY } }],
};

/** The example config, remote writing to `url` with short intervals, exposition off. */
function remoteWriting(url: string, extra: Record<string, unknown> = {}): Promise<RunningIngester> {
  return startIngester((c) => {
    c.remoteWrite = { url, flushInterval: '100ms', backoffMin: '50ms', backoffMax: '400ms', ...extra };
    c.exposition = { enabled: false };
    (c.routes as unknown[]).push(teamB);
  });
}

const send = (ing: RunningIngester, body: unknown, key = API_KEY) =>
  post(`${ing.url}/v1/integrations/metrics`, body, { apikey: key });

async function ownMetric(ing: RunningIngester, line: string): Promise<number> {
  const text = await (await fetch(`${ing.adminUrl}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

/** Raw samples of the series `selector` selects over the last hour: [{metric, values: [[s, "v"]]}]. */
async function raw(
  prom: Prometheus,
  selector: string,
): Promise<Array<{ metric: Record<string, string>; values: Array<[number, string]> }>> {
  const res = await fetch(`${prom.url}/api/v1/query?${new URLSearchParams({ query: `${selector}[1h]` })}`);
  const body = (await res.json()) as {
    data: { result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> };
  };
  return body.data.result;
}

describe('remote write to a real Prometheus', () => {
  let prom: Prometheus;
  const ingesters: RunningIngester[] = [];
  const started = async (ing: Promise<RunningIngester>): Promise<RunningIngester> => {
    const i = await ing;
    ingesters.push(i);
    return i;
  };

  beforeAll(async () => {
    prom = await startPrometheus();
  });
  afterAll(async () => {
    await Promise.all(ingesters.map((i) => i.stop('SIGKILL')));
    await prom?.stop();
  });

  it('makes posted points queryable with their labels, values and timestamps', async () => {
    const ing = await started(remoteWriting(prom.writeUrl));
    const nowS = Math.floor(Date.now() / 1000);
    const res = await send(ing, [
      { metric: 'rw.e2e.temp', data: 21.5, source: 'host-1', key: 'cpu0', tags: { env: 'prod' }, time: nowS - 60 },
      // 12:00 local at GMT+02:00 is 10:00 UTC.
      { metric: 'rw.e2e.temp', data: '22', source: 'host-2', time: nowS - 30 + 7200, utc_offset: 'GMT+02:00' },
      { metric: 'rw.e2e.temp', data: 23, source: 'host-3' },
    ]);
    expect(res.json()).toEqual({
      response: { processed: 3, cached: 0, received: 3 },
      success: true,
      message: 'Processed 3 data point(s)',
    });
    const series = await waitFor('three series', async () => {
      const r = await raw(prom, 'rw_e2e_temp');
      return r.length === 3 ? r : undefined;
    });
    const bySource = Object.fromEntries(series.map((s) => [s.metric.source, s]));
    expect(bySource['host-1']).toEqual({
      metric: { __name__: 'rw_e2e_temp', env: 'prod', key: 'cpu0', namespace: 'default', source: 'host-1' },
      values: [[nowS - 60, '21.5']],
    });
    expect(bySource['host-2']).toEqual({
      metric: { __name__: 'rw_e2e_temp', namespace: 'default', source: 'host-2' },
      values: [[nowS - 30, '22']],
    });
    const [receivedAt, value] = bySource['host-3']!.values[0]!;
    expect(value).toBe('23');
    expect(Math.abs(receivedAt - Date.now() / 1000)).toBeLessThan(30);
  });

  it('refuses a point more than 5 minutes in the future with 400 naming time, and sends nothing of the request', async () => {
    const ing = await started(remoteWriting(prom.writeUrl));
    const nowS = Math.floor(Date.now() / 1000);
    const res = await send(ing, [
      { metric: 'rw.e2e.future', data: 1, source: 'h' },
      { metric: 'rw.e2e.future', data: 2, source: 'h', time: nowS + 600 },
    ]);
    expect(res.status).toBe(400);
    expect(res.json().errors).toEqual([
      { index: 1, field: 'time', message: expect.stringContaining('more than 5 minutes in the future') },
    ]);
    await new Promise((r) => setTimeout(r, 500));
    expect(await query(prom, 'count(rw_e2e_future)')).toEqual([]);
  });

  it('refuses a point older than remoteWrite.maxSampleAge with 400 naming its index and time, so it cannot take the current points of its batch down with it', async () => {
    const ing = await started(remoteWriting(prom.writeUrl));
    const nowS = Math.floor(Date.now() / 1000);
    const points = Array.from({ length: 52 }, (_, i) => ({
      metric: 'rw.e2e.bound',
      data: i,
      source: `h${i}`,
      time: i === 17 ? nowS - 3 * 3600 : nowS - 5,
    }));
    const res = await send(ing, points);
    expect(res.status).toBe(400);
    expect(res.json().errors).toEqual([
      { index: 17, field: 'time', message: expect.stringContaining('45 minutes in the past') },
    ]);
    await new Promise((r) => setTimeout(r, 500));
    expect(await query(prom, 'count(rw_e2e_bound)')).toEqual([]);
    // The 51 current points, sent again without the old one, all arrive.
    expect(
      (
        await send(
          ing,
          points.filter((_, i) => i !== 17),
        )
      ).status,
    ).toBe(200);
    await waitFor('51 series', async () => (await raw(prom, 'rw_e2e_bound')).length === 51);
    // A point 40 minutes old is within the bound, and within what Prometheus takes.
    expect(
      (await send(ing, { metric: 'rw.e2e.bound.recent', data: 1, source: 'h', time: nowS - 40 * 60 })).status,
    ).toBe(200);
    await waitFor('the 40-minute-old sample', async () => (await raw(prom, 'rw_e2e_bound_recent')).length === 1);
  });

  it('(what the bound prevents) without it, Prometheus 2.42 with an out-of-order window answers 500 "too old sample" for the batch, for ever', async () => {
    const ing = await started(remoteWriting(prom.writeUrl, { maxSampleAge: '24h' }));
    const nowS = Math.floor(Date.now() / 1000);
    // The receiver's head has current samples (as in any running Prometheus).
    expect((await send(ing, { metric: 'rw.e2e.oob.now', data: 1, source: 'h', time: nowS - 5 })).status).toBe(200);
    await waitFor('a current sample', async () => (await raw(prom, 'rw_e2e_oob_now')).length === 1);
    const points = Array.from({ length: 52 }, (_, i) => ({
      metric: 'rw.e2e.oob',
      data: i,
      source: `h${i}`,
      time: i === 17 ? nowS - 3 * 3600 : nowS - 5,
    }));
    expect((await send(ing, points)).status).toBe(200);
    await waitFor(
      'retries',
      async () => (await ownMetric(ing, 'intake_remote_write_samples_retried_total{namespace="default"}')) >= 52 * 3,
    );
    expect(ing.stderr() + ing.stdout()).toMatch(/"status":500,"reason":"HTTP 500: too old sample"/);
    // The current points that share the old one's batch (its lane: series are spread over two) are
    // not stored: the batch is refused as a whole, again and again, and holds its lane.
    const stored = Number((await query(prom, 'count(rw_e2e_oob)'))[0]?.value[1] ?? 0);
    expect(stored).toBeLessThan(51);
  });

  it('makes ONE series with every sample when two ingesters receive alternate points of it', async () => {
    const a = await started(remoteWriting(prom.writeUrl, { flushInterval: '50ms' }));
    const b = await started(remoteWriting(prom.writeUrl, { flushInterval: '300ms' }));
    const t0 = Math.floor(Date.now() / 1000) - 120;
    for (let i = 0; i < 20; i++) {
      const res = await send(i % 2 === 0 ? a : b, { metric: 'rw.e2e.shared', data: i, source: 'h', time: t0 + i });
      expect(res.status).toBe(200);
    }
    const series = await waitFor(
      '20 samples',
      async () => {
        const r = await raw(prom, 'rw_e2e_shared');
        return r.length === 1 && r[0]!.values.length === 20 ? r : undefined;
      },
      15_000,
    );
    expect(series[0]!.values).toEqual(Array.from({ length: 20 }, (_, i) => [t0 + i, String(i)]));
  });

  it('does not retry a batch Prometheus refuses with 400, and logs its reason', async () => {
    const a = await started(remoteWriting(prom.writeUrl));
    const b = await started(remoteWriting(prom.writeUrl));
    const t = Math.floor(Date.now() / 1000) - 10;
    await send(a, { metric: 'rw.e2e.dup', data: 1, source: 'h', time: t });
    await waitFor('the first value', async () => (await raw(prom, 'rw_e2e_dup')).length === 1);
    // Same series, same timestamp, another value: Prometheus answers 400 (duplicate sample).
    expect((await send(b, { metric: 'rw.e2e.dup', data: 2, source: 'h', time: t })).status).toBe(200);
    await waitFor(
      'the drop',
      async () =>
        (await ownMetric(b, 'intake_remote_write_samples_dropped_total{namespace="default",reason="rejected"}')) === 1,
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(await ownMetric(b, 'intake_remote_write_samples_retried_total{namespace="default"}')).toBe(0);
    expect(b.stderr() + b.stdout()).toMatch(/"status":400.*duplicate sample/);
    expect((await raw(prom, 'rw_e2e_dup'))[0]!.values).toEqual([[t, '1']]);
  });

  it('delivers points accepted while Prometheus was down once it is back', async () => {
    const ing = await started(remoteWriting(prom.writeUrl));
    await prom.kill('SIGKILL');
    const t0 = Math.floor(Date.now() / 1000) - 30;
    for (let i = 0; i < 5; i++)
      expect((await send(ing, { metric: 'rw.e2e.outage', data: i, source: 'h', time: t0 + i })).status).toBe(200);
    await waitFor(
      'failed attempts',
      async () => (await ownMetric(ing, 'intake_remote_write_samples_failed_total{namespace="default"}')) > 0,
    );
    await new Promise((r) => setTimeout(r, 1000));
    await prom.restart();
    const series = await waitFor(
      '5 samples',
      async () => {
        const r = await raw(prom, 'rw_e2e_outage');
        return r.length === 1 && r[0]!.values.length === 5 ? r : undefined;
      },
      20_000,
    );
    expect(series[0]!.values.map((v) => v[1])).toEqual(['0', '1', '2', '3', '4']);
    expect(await ownMetric(ing, 'intake_remote_write_samples_retried_total{namespace="default"}')).toBeGreaterThan(0);
  });

  it('falls back from protocol 2.0 to 1.0 against Prometheus 2.42 (204 without *-Written headers) and delivers the points', async () => {
    const ing = await started(remoteWriting(prom.writeUrl, { protocol: '2.0' }));
    const t = Math.floor(Date.now() / 1000) - 5;
    expect((await send(ing, { metric: 'rw.e2e.v2', data: 3, source: 'h', time: t })).status).toBe(200);
    const series = await waitFor('the sample', async () => {
      const r = await raw(prom, 'rw_e2e_v2');
      return r.length === 1 ? r : undefined;
    });
    expect(series[0]!.values).toEqual([[t, '3']]);
    expect(ing.stderr() + ing.stdout()).toMatch(/falling back to 1.0 for good/);
  });

  it('flushes queued points to Prometheus on SIGTERM', async () => {
    const ing = await started(remoteWriting(prom.writeUrl, { flushInterval: '10m' }));
    expect((await send(ing, { metric: 'rw.e2e.shutdown', data: 7, source: 'h' })).status).toBe(200);
    expect(await ing.stop('SIGTERM')).toBe(0);
    expect((await raw(prom, 'rw_e2e_shutdown'))[0]?.values.map((v) => v[1])).toEqual(['7']);
  });
});

describe('remote write without a reachable receiver', () => {
  let ing: RunningIngester;
  beforeAll(async () => {
    ing = await remoteWriting(`http://127.0.0.1:${await freePort()}/api/v1/write`, {
      maxQueuedSamples: 5,
      batchSize: 5,
    });
  });
  afterAll(async () => {
    await ing?.stop('SIGKILL');
  });

  it('answers 503 with Retry-After once the queue is full, and accepts nothing of that request', async () => {
    const point = (i: number) => ({ metric: 'rw.e2e.full', data: i, source: `h${i}` });
    expect((await send(ing, [1, 2, 3, 4].map(point))).status).toBe(200);
    const full = await send(ing, [5, 6].map(point));
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toBe('5');
    expect(full.json().message).toMatch(/remote write queue is full/);
    // All or nothing: one more point still fits.
    expect((await send(ing, point(7))).status).toBe(200);
    expect(await ownMetric(ing, 'intake_datapoints_rejected_total{namespace="default",reason="queue_full"}')).toBe(2);
  });

  it('does not serve /metrics/ingested when exposition is disabled', async () => {
    expect((await fetch(`${ing.adminUrl}/metrics/ingested`)).status).toBe(404);
  });
});

it('sends each tenant in requests of its own, with the tenant header (two API keys, two namespaces)', async () => {
  const receiver = await startRecordingReceiver();
  const ing = await remoteWriting(receiver.url, { tenantHeader: 'X-Scope-OrgID', headers: { 'X-Extra': 'yes' } });
  try {
    for (let i = 0; i < 3; i++) {
      expect((await send(ing, { metric: 'rw.e2e.tenant', data: i, source: 'a', tags: { i } })).status).toBe(200);
      expect((await send(ing, { metric: 'rw.e2e.tenant', data: i, source: 'b', tags: { i } }, TEAM_B_KEY)).status).toBe(
        200,
      );
    }
    await waitFor('6 samples', async () => receiver.requests.flatMap((r) => flatten(r.request)).length === 6);
    for (const r of receiver.requests) {
      const namespaces = new Set(flatten(r.request).map((s) => Object.fromEntries(s.labels).namespace));
      expect([...namespaces]).toEqual([r.headers['x-scope-orgid']]);
      expect(r.headers['x-extra']).toBe('yes');
      expect(r.headers['content-encoding']).toBe('snappy');
    }
    expect(new Set(receiver.requests.map((r) => r.headers['x-scope-orgid']))).toEqual(new Set(['default', 'team-b']));
  } finally {
    await ing.stop('SIGKILL');
    await receiver.close();
  }
});
