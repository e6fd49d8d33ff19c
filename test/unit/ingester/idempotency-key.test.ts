/** The Idempotency-Key header through the events route (fastify.inject). */
import { harness } from './harness.js';

describe('POST /events/webhook_<name> with Idempotency-Key', () => {
  it('gives a retried request the same event ids, and another key other ids', async () => {
    const h = await harness();
    const batch = [
      { source: 'a', severity: 1 },
      { source: 'b', severity: 2 },
    ];
    await h.postEvents(batch, { 'idempotency-key': 'order-1' });
    await h.postEvents(batch, { 'idempotency-key': 'order-1' });
    await h.postEvents(batch, { 'idempotency-key': 'order-2' });
    const ids = h.sink.events.map((e) => e.id);
    expect(ids.slice(2, 4)).toEqual(ids.slice(0, 2));
    expect(new Set(ids).size).toBe(4);
    await h.app.close();
  });

  it('refuses a malformed key with 400 naming the header, accepting nothing', async () => {
    const h = await harness();
    const res = await h.postEvents({ source: 'a', severity: 1 }, { 'idempotency-key': 'has space' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, errors: [{ field: 'Idempotency-Key' }] });
    expect(h.sink.events).toHaveLength(0);
    await h.app.close();
  });
});
