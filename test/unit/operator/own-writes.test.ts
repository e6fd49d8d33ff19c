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
});
