import { describe, expect, it } from '@jest/globals';
import { V1ObjectMeta, V1Secret } from '@kubernetes/client-node';
import {
  keptResource,
  keptSecret,
  LIST_PAGE,
  pagedList,
  StringPool,
  withoutManagedFields,
} from '../../../operator/cached.js';

describe('pagedList', () => {
  it('follows continue tokens page by page, keeping each item as its page arrives, with the last resourceVersion', async () => {
    const asked: Array<[number, string | undefined]> = [];
    const kept: number[] = [];
    const pages = [
      { items: [1, 2], metadata: { resourceVersion: '7', _continue: 'a' } },
      { items: [3], metadata: { resourceVersion: '7', continue: 'b' } },
      { items: [4], metadata: { resourceVersion: '7' } },
    ];
    const list = await pagedList(
      async (limit, token) => {
        asked.push([limit, token]);
        return pages[asked.length - 1] as (typeof pages)[number];
      },
      (n: number) => {
        kept.push(asked.length);
        return n * 10;
      },
    );
    expect(list).toEqual({ items: [10, 20, 30, 40], resourceVersion: '7' });
    expect(asked).toEqual([
      [LIST_PAGE, undefined],
      [LIST_PAGE, 'a'],
      [LIST_PAGE, 'b'],
    ]);
    // Each item was cut while its own page was the latest one read.
    expect(kept).toEqual([1, 1, 2, 3]);
  });

  it('fails when a page fails (the informer relists later and keeps its cache meanwhile)', async () => {
    let n = 0;
    await expect(
      pagedList(
        async () => {
          if (n++ === 1) throw new Error('410 Gone');
          return { items: [1], metadata: { _continue: 'x' } };
        },
        (i) => i,
      ),
    ).rejects.toThrow('410 Gone');
  });
});

describe('keptSecret', () => {
  it('keeps name, version, labels, annotations, owners and data, and nothing else', () => {
    const secret: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 'intake-webhook-a',
        namespace: 't1',
        uid: 'u-1',
        resourceVersion: '42',
        creationTimestamp: new Date(0),
        labels: { 'intake.dev/credentials': 'true' },
        annotations: { 'intake.dev/rotated-for': '' },
        ownerReferences: [
          {
            apiVersion: 'intake.dev/v1alpha1',
            kind: 'WebhookIntegration',
            name: 'a',
            uid: 'w-1',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
        managedFields: [{ manager: 'intake', operation: 'Update' }],
      },
      data: { password: 'cGFzcw==' },
    };
    expect(keptSecret(secret)).toEqual({
      metadata: {
        name: 'intake-webhook-a',
        namespace: 't1',
        resourceVersion: '42',
        labels: { 'intake.dev/credentials': 'true' },
        annotations: { 'intake.dev/rotated-for': '' },
        ownerReferences: [
          { apiVersion: 'intake.dev/v1alpha1', kind: 'WebhookIntegration', name: 'a', uid: 'w-1', controller: true },
        ],
      },
      data: { password: 'cGFzcw==' },
    });
  });

  it('drops what client-node leaves undefined on a listed Secret (a class instance with every field present)', () => {
    const metadata = Object.assign(new V1ObjectMeta(), { name: 'r', namespace: 'intake', resourceVersion: '1' });
    const secret = Object.assign(new V1Secret(), { metadata, data: {} });
    const kept = keptSecret(secret);
    expect(kept).toEqual({ metadata: { name: 'r', namespace: 'intake', resourceVersion: '1' } });
    expect(Object.keys(kept.metadata ?? {})).toEqual(['name', 'namespace', 'resourceVersion']);
    expect(kept).not.toBeInstanceOf(V1Secret);
  });

  it('keeps a deletion under way', () => {
    const at = new Date(1000);
    expect(keptSecret({ metadata: { name: 'r', deletionTimestamp: at } }).metadata?.deletionTimestamp).toBe(at);
  });
});

describe('withoutManagedFields', () => {
  it('removes managedFields and keeps the rest', () => {
    const obj = { metadata: { name: 'a', managedFields: [{}] }, spec: { x: 1 } };
    expect(withoutManagedFields(obj)).toEqual({ metadata: { name: 'a' }, spec: { x: 1 } });
  });
});

describe('StringPool', () => {
  it('hands back one copy of equal strings, passes anything else through, and stays bounded', () => {
    const pool = new StringPool();
    const a = ['Re', 'ady'].join('');
    const b = ['Rea', 'dy'].join('');
    expect(pool.intern(a)).toBe(a);
    expect(pool.intern(b)).toBe(a);
    expect(pool.intern(undefined)).toBeUndefined();
    expect(pool.intern(3)).toBe(3);
    for (let i = 0; i < 70_000; i++) pool.intern(`s${i}`);
    expect(pool.size).toBeLessThanOrEqual(65_536);
  });
});

describe('keptResource', () => {
  it('keeps the resource whole but for managedFields, changed in place, with the same values', () => {
    const obj = {
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      metadata: { name: 'a', namespace: 't1', creationTimestamp: '2026-11-27T08:00:00Z', managedFields: [{}] },
      spec: { suspend: false },
      status: {
        url: 'https://intake.test/events/webhook_a',
        conditions: [{ type: 'Ready', status: 'True', reason: 'Published', observedGeneration: 1 }],
      },
    };
    const copy = structuredClone(obj);
    delete (copy.metadata as { managedFields?: unknown }).managedFields;
    expect(keptResource(obj)).toBe(obj);
    expect(obj).toEqual(copy);
  });
});
