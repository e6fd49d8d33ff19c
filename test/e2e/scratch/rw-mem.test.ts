import { randomBytes } from 'node:crypto';
import { waitFor } from '../../support/waiting.js';
import { API_KEY, post, startIngester } from '../support/ingester.js';
import { readFileSync } from 'node:fs';
import { rssMiB, startMisbehavingReceiver } from '../support/misbehaving-receiver.js';

async function metric(adminUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const l = text.split('\n').find((x) => x.startsWith(name + ' ') || x.startsWith(name + '{'));
  return l ? Number(l.split(' ').pop()) : NaN;
}

it('measures', async () => {
  const receiver = await startMisbehavingReceiver('/api/v1/write');
  receiver.okStatus = 500;
  const nSeries = Number(process.env.NSERIES ?? 10000);
  const ing = await startIngester((c: any) => {
    c.remoteWrite = { url: receiver.url, flushIntervalMs: 100, minBackoffMs: 100, maxBackoffMs: 1000, timeoutMs: 2000, ...(process.env.OLD ? {} : { maxQueuedBytesPerTenant: 64 * 1024 * 1024 }) };
    c.exposition = { enabled: false };
    (c.limits as Record<string, unknown>).maxSeriesPerNamespace = 100000;
    (c.tenantLimits as any).apiKey.maxSeries = 100000;
  }, { nodeArgs: (process.env.NODEARGS ?? '').split(' ').filter(Boolean) });
  const pid = ing.child.pid as number;
  const smaps = () => { const sm = readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n'); let cur = ''; const h: Record<string, number> = {}; for (const l of sm) { if (/^[0-9a-f]+-[0-9a-f]+ /.test(l)) { const p = l.split(/\s+/); const [a, b] = p[0]!.split('-').map((x) => parseInt(x, 16)); cur = p[5] ? p[5].slice(-12) : (b! - a! === 262144 ? 'v8page' : (b! - a! >= 1 << 20 ? 'anonbig' : 'anonsmall')); } else if (l.startsWith('Rss:')) h[cur] = (h[cur] ?? 0) + Number(l.split(/\s+/)[1]); } return Object.entries(h).filter(([, v]) => v > 2048).map(([k, v]) => `${k}=${(v / 1024).toFixed(0)}`).join(' '); };
  const show = async (what: string) =>
    process.stdout.write(
      `${what}: rss ${rssMiB(pid).toFixed(0)} MiB, heapUsed ${((await metric(ing.adminUrl, 'nodejs_heap_size_used_bytes')) / 2 ** 20).toFixed(0)}, heapTotal ${((await metric(ing.adminUrl, 'nodejs_heap_size_total_bytes')) / 2 ** 20).toFixed(0)}, external ${((await metric(ing.adminUrl, 'nodejs_external_memory_bytes')) / 2 ** 20).toFixed(0)}, queued ${((await metric(ing.adminUrl, 'intake_remote_write_queued_bytes')) / 2 ** 20).toFixed(1)} MiB ${smaps()}\n`,
    );
  await show('baseline');
  const series = Array.from({ length: nSeries }, (_, i) => ({
    source: `host-${i}`,
    tags: { a: randomBytes(300).toString('hex'), b: randomBytes(300).toString('hex') },
  }));
  const t0 = Math.floor(Date.now() / 1000) - 600;
  let refusedInRow = 0;
  let accepted = 0;
  for (let n = 0; refusedInRow < 5 && n < 2000; n++) {
    const per = 500;
    const start = (n * per) % nSeries;
    const round = Math.floor((n * per) / nSeries);
    const body = Array.from({ length: per }, (_, k) => ({ metric: 'rw.heavy', data: n, time: t0 + round, ...series[(start + k) % nSeries] }));
    const res = await post(`${ing.url}/v1/integrations/metrics`, body, { apikey: API_KEY });
    if (res.status === 200) { accepted += per; refusedInRow = 0; } else { refusedInRow++; if (refusedInRow === 1) process.stdout.write(res.text.slice(0, 300) + '\n'); }
  }
  await show(`full (${accepted} accepted)`);
  receiver.okStatus = 204;
  await waitFor('drained', async () => (await metric(ing.adminUrl, 'intake_remote_write_queued_bytes')) === 0, 120_000, 500);
  receiver.calls.length = 0;
  await new Promise((r) => setTimeout(r, 3000));
  await show('drained');
  await new Promise((r) => setTimeout(r, 15000));
  await show('drained +10s');
  await ing.stop('SIGKILL');
  await receiver.close();
}, 300_000);
