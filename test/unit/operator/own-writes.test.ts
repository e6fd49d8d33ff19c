import { describe, expect, it } from '@jest/globals';
import { OwnWrites } from '../../../operator/own-writes.js';

const obj = (name: string, resourceVersion?: string, namespace = 'ns') => ({
  metadata: { namespace, name, ...(resourceVersion ? { resourceVersion } : {}) },
});

describe('OwnWrites', () => {
  it('recognises the event of a write once, and nothing else', () => {
    const own = new OwnWrites();
    own.record('Secret', obj('a', '10'));
    expect(own.isOwn('Secret', obj('a', '9'))).toBe(false);
    expect(own.isOwn('WebhookIntegration', obj('a', '10'))).toBe(false);
    expect(own.isOwn('Secret', obj('a', '10', 'other'))).toBe(false);
    expect(own.isOwn('Secret', obj('a', '10'))).toBe(true);
    // Seen once: the same version again (a relist) is not taken for a write of ours any more.
    expect(own.isOwn('Secret', obj('a', '10'))).toBe(false);
    expect(own.size).toBe(0);
  });

  it('a later change by someone else is not ours', () => {
    const own = new OwnWrites();
    own.record('WebhookIntegration', obj('a', '10'));
    expect(own.isOwn('WebhookIntegration', obj('a', '11'))).toBe(false);
  });

  it('ignores what has no resourceVersion, forgets deleted objects, and stays bounded', () => {
    const own = new OwnWrites();
    own.record('Secret', undefined);
    own.record('Secret', obj('a'));
    expect(own.size).toBe(0);
    expect(own.isOwn('Secret', obj('a'))).toBe(false);
    own.record('Secret', obj('b', '5'));
    own.forget('Secret', obj('b'));
    expect(own.isOwn('Secret', obj('b', '5'))).toBe(false);
    for (let i = 0; i < 10_001; i++) own.record('Secret', obj(`s${i}`, '1'));
    expect(own.size).toBeLessThanOrEqual(10_000);
  });

  it('holds back the events of an object while its write is under way, and says when one was not the write', async () => {
    const own = new OwnWrites();
    // The write's own event arrives before its answer: held back, and nothing missed.
    let done = await own.during('Secret', 'ns', 'a', async () => {
      expect(own.isOwn('Secret', obj('a', '10'))).toBe(true);
      return obj('a', '10');
    });
    expect(done.missed).toBe(false);
    // Seen already: the same version later (a relist) is not taken for ours.
    expect(own.isOwn('Secret', obj('a', '10'))).toBe(false);

    // Someone else's change arrives during the write, then the write's own: missed.
    done = await own.during('Secret', 'ns', 'a', async () => {
      expect(own.isOwn('Secret', obj('a', '11'))).toBe(true);
      expect(own.isOwn('Secret', obj('a', '12'))).toBe(true);
      return obj('a', '12');
    });
    expect(done.missed).toBe(true);

    // The answer first, as usual: the event after it is recognised as before.
    done = await own.during('Secret', 'ns', 'a', async () => obj('a', '13'));
    expect(done.missed).toBe(false);
    expect(own.isOwn('Secret', obj('a', '13'))).toBe(true);

    // Other objects are not held back meanwhile.
    await own.during('Secret', 'ns', 'a', async () => {
      expect(own.isOwn('Secret', obj('b', '20'))).toBe(false);
      return undefined;
    });
  });

  it('a failed write holds back nothing after it, and a write that wrote nothing misses what came meanwhile', async () => {
    const own = new OwnWrites();
    await expect(
      own.during('Secret', 'ns', 'a', async () => {
        throw new Error('409');
      }),
    ).rejects.toThrow('409');
    expect(own.isOwn('Secret', obj('a', '5'))).toBe(false);
    const done = await own.during('Secret', 'ns', 'a', async () => {
      own.isOwn('Secret', obj('a', '6'));
      return undefined;
    });
    expect(done.missed).toBe(true);
  });
});
