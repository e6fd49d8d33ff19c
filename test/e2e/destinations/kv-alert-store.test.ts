/**
 * The alert-state store on a real nats-server key-value bucket: compare-and-set refusals are told
 * apart from errors (two replicas writing one alert), writes return the revision a read then sees,
 * a create after a delete works, and the re-send lease passes to another replica only once it expired.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { AlertState } from '../../../ingester/destinations/alertmanager/alerts.js';
import { KvAlertStore } from '../../../ingester/destinations/alertmanager/kv-alert-store.js';
import { PubAckPublisher } from '../../../ingester/sinks/pub-acks.js';
import { startNats, type RunningNats } from '../support/nats-server.js';

let nats: RunningNats;
let nc: NatsConnection;
let store: KvAlertStore;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const bucket = 'intake-alerts-test';
  const kv = await new Kvm(jetstream(nc)).create(bucket, { history: 1 });
  store = new KvAlertStore(kv, bucket, new PubAckPublisher(nc), 2000);
}, 30_000);

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

const state = (key: string, lastEventId: string): AlertState => ({
  key,
  labels: { alertname: 'A' },
  annotations: {},
  startsAt: new Date(0).toISOString(),
  lastEventAtMs: 0,
  lastEventId,
});

it('writes only over the version it read (compare-and-set)', async () => {
  const created = await store.put(state('k1', 'e1'), 0);
  expect(created).toEqual(expect.any(Number));
  // A second "create" loses: the other replica created it first.
  expect(await store.put(state('k1', 'e2'), 0)).toBe(false);
  const read = await store.get('k1');
  expect(read?.state.lastEventId).toBe('e1');
  // The version a write returns is the one the next read sees (what the writer keeps to skip that read).
  expect(read?.version).toBe(created);
  const updated = await store.put(state('k1', 'e3'), read?.version as number);
  expect(updated).toEqual(expect.any(Number));
  expect((await store.get('k1'))?.version).toBe(updated);
  // A write based on the version before that one loses.
  expect(await store.put(state('k1', 'e4'), read?.version as number)).toBe(false);
  expect((await store.get('k1'))?.state.lastEventId).toBe('e3');
});

it('lists, deletes, and creates again after a delete', async () => {
  await store.put(state('k2', 'x'), 0);
  const keys: string[] = [];
  for await (const k of store.keys()) keys.push(k);
  expect(keys.sort()).toEqual(['k1', 'k2']);
  await store.delete('k2');
  expect(await store.get('k2')).toBeUndefined();
  // A create over the delete marker (what a re-send leaves for a spent alert).
  expect(await store.put(state('k2', 'y'), 0)).toEqual(expect.any(Number));
  expect((await store.get('k2'))?.state.lastEventId).toBe('y');
  expect(await store.put(state('k2', 'z'), 0)).toBe(false);
});

it('gives the re-send lease to one holder until it expires', async () => {
  expect(await store.holdResendLease('a', 300)).toBe(true);
  expect(await store.holdResendLease('b', 300)).toBe(false);
  expect(await store.holdResendLease('a', 300)).toBe(true);
  await new Promise((r) => setTimeout(r, 400));
  expect(await store.holdResendLease('b', 300)).toBe(true);
  expect(await store.holdResendLease('a', 300)).toBe(false);
});

it('tells a write no stream takes (an error) from a lost compare-and-set (false)', async () => {
  const publisher = new PubAckPublisher(nc);
  expect(await publisher.write('nowhere.at.all', '{}', {}, 2000)).toEqual({
    code: 503,
    description: expect.stringContaining('no responders'),
  });
  const kv = await new Kvm(jetstream(nc)).open('intake-alerts-test');
  const misnamed = new KvAlertStore(kv, 'no-such-bucket', publisher, 2000);
  await expect(misnamed.put(state('k9', 'x'), 0)).rejects.toThrow(/no responders/);
  // A connection that goes away answers every write still waiting, as not answered in time.
  const other = await connect({ servers: nats.url });
  const gone = new PubAckPublisher(other);
  const waiting = gone.write('nowhere.at.all', '{}', {}, 60_000);
  gone.abandonAll();
  expect(await waiting).toEqual({ timeout: true });
  await other.close();
});

it("writes a batch's states together (putAll), each compare-and-set answered on its own", async () => {
  const before = await store.put(state('p1', 'old'), 0);
  await store.put(state('p3', 'gone'), 0);
  await store.delete('p3');
  const answers = await store.putAll([
    // A new alert.
    { state: state('p0', 'a'), version: 0 },
    // An update over the version written.
    { state: state('p1', 'b'), version: before as number },
    // A "create" of an alert that exists: lost.
    { state: state('p1', 'c'), version: 0 },
    // A create over a deleted entry (its delete marker).
    { state: state('p3', 'd'), version: 0 },
    // An update over a version long gone: lost.
    { state: state('p0', 'e'), version: 1 },
  ]);
  expect(answers).toEqual([expect.any(Number), expect.any(Number), false, expect.any(Number), false]);
  expect((await store.get('p0'))?.version).toBe(answers[0]);
  expect((await store.get('p0'))?.state.lastEventId).toBe('a');
  expect((await store.get('p1'))?.state.lastEventId).toBe('b');
  expect((await store.get('p1'))?.version).toBe(answers[1]);
  expect((await store.get('p3'))?.state.lastEventId).toBe('d');
  // A batch no stream takes: every write an error, none thrown.
  const kv = await new Kvm(jetstream(nc)).open('intake-alerts-test');
  const misnamed = new KvAlertStore(kv, 'no-such-bucket', new PubAckPublisher(nc), 2000);
  const refused = await misnamed.putAll([{ state: state('p9', 'x'), version: 3 }]);
  expect(refused).toEqual([expect.any(Error)]);
  expect((refused[0] as Error).message).toMatch(/no responders/);
});
