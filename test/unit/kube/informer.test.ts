/**
 * The informer against a small fake API server speaking the watch protocol: it relists on an
 * in-stream 410, keeps its cache through a failed connection, and reports adds and deletes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import pino from 'pino';
import { KubeApiClient } from '../../../kube/api-client.js';
import { kubeconfigConnection } from '../../../kube/api-connection.js';
import { Informer } from '../../../kube/informer.js';
import { until } from '../../support/waiting.js';

interface Fake {
  server: Server;
  url: string;
  lists: number;
  watches: string[];
  /** What each successive watch connection sends (lines), then it ends. */
  script: Array<(res: import('node:http').ServerResponse) => void>;
}

const cm = (name: string, rv: string): V1ConfigMap => ({ metadata: { name, namespace: 'ns', resourceVersion: rv } });

async function fakeServer(): Promise<Fake> {
  const fake: Fake = { server: createServer(), url: '', lists: 0, watches: [], script: [] };
  fake.server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.searchParams.get('watch') === 'true') {
      fake.watches.push(url.searchParams.get('resourceVersion') ?? '');
      const step = fake.script.shift();
      if (step) step(res);
      else setTimeout(() => res.end(), 50);
      return;
    }
    fake.lists++;
    res.end(JSON.stringify({ items: [cm('a', '1')], metadata: { resourceVersion: String(10 * fake.lists) } }));
  });
  await new Promise<void>((r) => fake.server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  return fake;
}

function informerFor(
  fake: Fake,
  events: string[],
  keep?: (obj: V1ConfigMap) => V1ConfigMap,
  seen: V1ConfigMap[] = [],
): Informer<V1ConfigMap> {
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'informer-')), 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `clusters: [{name: c, cluster: {server: '${fake.url}'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n`,
  );
  return new Informer<V1ConfigMap>({
    name: 'test',
    watcher: new KubeApiClient(kubeconfigConnection(kubeconfig)),
    logger: pino({ level: process.env.DEBUG_INFORMER ? 'debug' : 'silent' }),
    watchPath: '/api/v1/namespaces/ns/configmaps',
    list: async () => {
      const res = await fetch(`${fake.url}/api/v1/namespaces/ns/configmaps`);
      const body = (await res.json()) as { items: V1ConfigMap[]; metadata: { resourceVersion: string } };
      return { items: body.items, resourceVersion: body.metadata.resourceVersion };
    },
    onEvent: (n, old) => {
      if (n) seen.push(n);
      events.push(`${n ? (old ? 'update' : 'add') : 'delete'}:${(n ?? old)?.metadata?.name}`);
    },
    ...(keep ? { keep } : {}),
  });
}

const waitUntil = (cond: () => boolean) => until(cond, 3000);

describe('Informer', () => {
  it('lists, then watches from the list resourceVersion, applying adds and deletes', async () => {
    const fake = await fakeServer();
    fake.script.push((res) => {
      res.write(`${JSON.stringify({ type: 'ADDED', object: cm('b', '11') })}\n`);
      res.write(`${JSON.stringify({ type: 'DELETED', object: cm('a', '12') })}\n`);
      setTimeout(() => res.end(), 20);
    });
    const events: string[] = [];
    const informer = informerFor(fake, events);
    informer.start();
    await informer.waitForSync();
    await waitUntil(() => events.length >= 3);
    expect(events.slice(0, 3)).toEqual(['add:a', 'add:b', 'delete:a']);
    expect(fake.watches[0]).toBe('10');
    expect(informer.list().map((c) => c.metadata?.name)).toEqual(['b']);
    await waitUntil(() => fake.watches.length >= 2);
    expect(fake.watches[1]).toBe('12');
    informer.stop();
    fake.server.close();
  });

  it('keeps no managedFields in its cache', async () => {
    const fake = await fakeServer();
    fake.script.push((res) => {
      const b = cm('b', '11');
      b.metadata = { ...b.metadata, managedFields: [{ manager: 'kubectl', operation: 'Update' }] };
      res.write(`${JSON.stringify({ type: 'ADDED', object: b })}\n`);
      setTimeout(() => res.end(), 20);
    });
    const informer = informerFor(fake, []);
    informer.start();
    await informer.waitForSync();
    await waitUntil(() => informer.get('ns/b') !== undefined);
    expect(informer.get('ns/b')?.metadata).toEqual({ name: 'b', namespace: 'ns', resourceVersion: '11' });
    informer.stop();
    fake.server.close();
  });

  it('caches what `keep` keeps, and hands onEvent the whole object, listed or watched', async () => {
    const fake = await fakeServer();
    fake.script.push((res) => {
      res.write(`${JSON.stringify({ type: 'ADDED', object: { ...cm('b', '11'), data: { k: 'v' } } })}\n`);
      setTimeout(() => res.end(), 20);
    });
    const seen: V1ConfigMap[] = [];
    const informer = informerFor(fake, [], (c) => ({ metadata: { name: c.metadata?.name, namespace: 'ns' } }), seen);
    informer.start();
    await informer.waitForSync();
    await waitUntil(() => informer.get('ns/b') !== undefined);
    expect(informer.get('ns/a')).toEqual({ metadata: { name: 'a', namespace: 'ns' } });
    expect(informer.get('ns/b')).toEqual({ metadata: { name: 'b', namespace: 'ns' } });
    expect(seen.map((c) => c.metadata?.resourceVersion)).toEqual(['1', '11']);
    expect(seen[1]?.data).toEqual({ k: 'v' });
    informer.stop();
    fake.server.close();
  });

  it('relists on an in-stream 410 Gone and keeps its cache meanwhile', async () => {
    const fake = await fakeServer();
    fake.script.push((res) => {
      res.write(
        `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } })}\n`,
      );
    });
    const events: string[] = [];
    const informer = informerFor(fake, events);
    informer.start();
    await informer.waitForSync();
    await waitUntil(() => fake.lists >= 2);
    expect(informer.get('ns/a')).toBeDefined();
    await waitUntil(() => fake.watches.length >= 2);
    expect(fake.watches[1]).toBe('20');
    informer.stop();
    fake.server.close();
  });

  it('relists when the watch request itself answers 410', async () => {
    const fake = await fakeServer();
    fake.script.push((res) => res.writeHead(410).end());
    const informer = informerFor(fake, []);
    informer.start();
    await informer.waitForSync();
    await waitUntil(() => fake.lists >= 2);
    expect(fake.lists).toBeGreaterThanOrEqual(2);
    informer.stop();
    fake.server.close();
  });
});
