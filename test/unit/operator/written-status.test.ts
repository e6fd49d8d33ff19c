import { describe, expect, it } from '@jest/globals';
import { WrittenStatus } from '../../../operator/written-status.js';

describe('WrittenStatus', () => {
  const ready = { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-27T05:00:00Z' }] };

  it('gives the written status until the cache shows the resourceVersion the write returned', () => {
    const written = new WrittenStatus();
    written.record('WebhookIntegration/a/hook', '7', ready);
    expect(written.fresher('WebhookIntegration/a/hook')).toBe(ready);
    // An older event (in flight before the write) changes nothing.
    written.seen('WebhookIntegration/a/hook', '6');
    expect(written.fresher('WebhookIntegration/a/hook')).toBe(ready);
    written.seen('WebhookIntegration/a/hook', '7');
    expect(written.fresher('WebhookIntegration/a/hook')).toBeUndefined();
    expect(written.size).toBe(0);
  });

  it('keeps one entry per resource, the latest write', () => {
    const written = new WrittenStatus();
    const later = { conditions: [] };
    written.record('ApiKey/a/key', '7', ready);
    written.record('ApiKey/a/key', '9', later);
    written.seen('ApiKey/a/key', '7');
    expect(written.fresher('ApiKey/a/key')).toBe(later);
    expect(written.fresher('ApiKey/a/other')).toBeUndefined();
  });

  it('forgets an entry after its time (a relisted cache may never show that resourceVersion), and on forget', () => {
    let now = 1000;
    const written = new WrittenStatus(30_000, () => now);
    written.record('ApiKey/a/key', '7', ready);
    now += 30_000;
    expect(written.fresher('ApiKey/a/key')).toBe(ready);
    now += 1;
    expect(written.fresher('ApiKey/a/key')).toBeUndefined();
    written.record('ApiKey/a/key', '8', ready);
    written.forget('ApiKey/a/key');
    expect(written.fresher('ApiKey/a/key')).toBeUndefined();
  });

  it('records nothing without a resourceVersion or a status', () => {
    const written = new WrittenStatus();
    written.record('ApiKey/a/key', undefined, ready);
    written.record('ApiKey/a/key', '7', undefined);
    expect(written.size).toBe(0);
  });
});
