import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { AlertStore, Versioned } from '../../../../ingester/destinations/alert-store.js';
import { AlertmanagerDestination } from '../../../../ingester/destinations/alertmanager-destination.js';
import type { AlertState, PostableAlert } from '../../../../ingester/destinations/alerts.js';
import { DestinationMetrics } from '../../../../ingester/destinations/metrics.js';
import type { NormalisedEvent } from '../../../../ingester/events.js';

/** The store's contract in memory: versions, compare-and-set, a lease. */
class MemoryStore implements AlertStore {
  readonly rows = new Map<string, Versioned>();
  leaseHolder = '';
  async get(key: string): Promise<Versioned | undefined> {
    return this.rows.get(key);
  }
  async put(state: AlertState, version: number): Promise<boolean> {
    if ((this.rows.get(state.key)?.version ?? 0) !== version) return false;
    this.rows.set(state.key, { state, version: version + 1 });
    return true;
  }
  async delete(key: string): Promise<void> {
    this.rows.delete(key);
  }
  async list(): Promise<AlertState[]> {
    return [...this.rows.values()].map((v) => v.state);
  }
  async holdResendLease(holder: string): Promise<boolean> {
    this.leaseHolder ||= holder;
    return this.leaseHolder === holder;
  }
}

let server: Server;
let url = '';
const posts: PostableAlert[][] = [];
let status = 200;
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      posts.push(JSON.parse(body) as PostableAlert[]);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  posts.length = 0;
  status = 200;
});

const event = (signature: string, severity: number, id: string): NormalisedEvent =>
  ({ id, integration: 'demo', namespace: 'default', received_at: new Date().toISOString(), agent_time: new Date().toISOString(), signature, source: 'h', severity, severity_name: severity === 0 ? 'clear' : 'major', custom_info: {} }) as NormalisedEvent;

const destination = (store: AlertStore, o: { resolveAfterMs?: number } = {}, holder = 'me'): AlertmanagerDestination =>
  new AlertmanagerDestination('am', { urls: [url], resendIntervalMs: 60_000, resolvedRetentionMs: 900_000, resolveAfterMs: o.resolveAfterMs ?? 0, timeoutMs: 1000 }, () => store, new DestinationMetrics(new Registry()), pino({ level: 'silent' }), holder);

describe('Alertmanager destination', () => {
  it('stores each alert state and posts the alerts of a batch once each', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    expect(await d.send([event('a', 4, '1'), event('b', 4, '2'), event('a', 4, '3')])).toEqual({ kind: 'delivered' });
    expect(posts).toHaveLength(1);
    expect(posts[0]?.map((a) => a.labels.signature).sort()).toEqual(['a', 'b']);
    expect(store.rows.size).toBe(2);
    await d.close();
  });

  it('retries when no Alertmanager took the alerts, and keeps the state for the re-send', async () => {
    const store = new MemoryStore();
    const d = destination(store);
    status = 503;
    expect(await d.send([event('a', 4, '1')])).toMatchObject({ kind: 'retry', reason: 'http_503' });
    status = 200;
    // The redelivered event sends its state again.
    expect(await d.send([event('a', 4, '1')])).toEqual({ kind: 'delivered' });
    expect(posts.at(-1)?.[0]?.labels.signature).toBe('a');
    await d.close();
  });

  it('re-sends only while holding the lease, resolves alerts past resolveAfter, forgets spent ones', async () => {
    const store = new MemoryStore();
    const d = destination(store, { resolveAfterMs: 1 });
    await d.send([event('a', 4, '1')]);
    await new Promise((r) => setTimeout(r, 5));
    await d.resend();
    const resent = posts.at(-1)?.[0];
    expect(Date.parse(resent?.endsAt ?? '')).toBeLessThanOrEqual(Date.now());
    expect(resent?.annotations.resolved_by).toMatch(/^resolveAfter/);
    expect((await store.get(resent ? [...store.rows.keys()][0] as string : ''))?.state.resolvedAt).toBeDefined();

    const other = destination(store, {}, 'someone-else');
    const before = posts.length;
    await other.resend();
    expect(posts.length).toBe(before);
    await Promise.all([d.close(), other.close()]);
  });
});
