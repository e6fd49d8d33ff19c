/**
 * The PubAck publisher's batch of conditional writes (writeAll: an Alertmanager batch's alert
 * states), on a fake connection: each write goes out with its expected sequence, the answers come
 * back in the writes' order whatever order the stream answers in, and one timer answers the rest
 * of the batch as timed out. Also the PubAck read from its bytes, and what falls back to parsing.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { PubAckPublisher, pubAckSeq } from '../../../../ingester/sinks/pub-acks.js';

interface Sent {
  subject: string;
  payload: string;
  reply: string;
  headers: string;
}

const text = new TextEncoder();
const decoder = new TextDecoder();

/** A connection that records what is published and lets the test answer on the inbox. */
function fakeConnection(): { nc: NatsConnection; sent: Sent[]; answer: (reply: string, body: string) => void } {
  const sent: Sent[] = [];
  let onMessage: ((err: unknown, msg: { subject: string; data: Uint8Array }) => void) | undefined;
  const nc = {
    subscribe: (_subject: string, opts: { callback: typeof onMessage }) => {
      onMessage = opts.callback;
      return { unsubscribe: () => undefined };
    },
    publish: (subject: string, payload: string, opts: { reply: string; headers: { encode(): Uint8Array } }) => {
      sent.push({ subject, payload, reply: opts.reply, headers: decoder.decode(opts.headers.encode()) });
    },
  } as unknown as NatsConnection;
  return {
    nc,
    sent,
    answer: (reply, body) => onMessage?.(null, { subject: reply, data: text.encode(body) }),
  };
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('PubAck publisher: a batch of conditional writes', () => {
  it('sends each write with its expected last sequence and answers them in order, together', async () => {
    const { nc, sent, answer } = fakeConnection();
    const publisher = new PubAckPublisher(nc);
    const answered = publisher.writeAll(
      [
        { subject: '$KV.b.alert.a', payload: '{"a":1}', expectedLastSubjectSeq: 0 },
        { subject: '$KV.b.alert.b', payload: '{"b":1}', expectedLastSubjectSeq: 41 },
        { subject: '$KV.b.alert.c', payload: '{"c":1}', expectedLastSubjectSeq: 7 },
      ],
      5000,
    );
    await nextTurn();
    expect(sent.map((s) => [s.subject, s.payload])).toEqual([
      ['$KV.b.alert.a', '{"a":1}'],
      ['$KV.b.alert.b', '{"b":1}'],
      ['$KV.b.alert.c', '{"c":1}'],
    ]);
    expect(sent.map((s) => s.headers)).toEqual([
      'NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 0\r\n\r\n',
      'NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 41\r\n\r\n',
      'NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 7\r\n\r\n',
    ]);
    expect(new Set(sent.map((s) => s.reply)).size).toBe(3);
    let settled = false;
    void answered.then(() => (settled = true));
    // Answered out of order; the batch resolves once every write has its answer.
    answer((sent[2] as Sent).reply, '{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 9"}}');
    answer((sent[0] as Sent).reply, '{"stream":"KV_b","seq":42}');
    await nextTurn();
    expect(settled).toBe(false);
    answer((sent[1] as Sent).reply, '{"stream":"KV_b","domain":"hub","seq":43}');
    expect(await answered).toEqual([{ seq: 42 }, { seq: 43 }, { code: 10071, description: 'wrong last sequence: 9' }]);
    // A late answer for a write already answered changes nothing.
    answer((sent[0] as Sent).reply, '{"stream":"KV_b","seq":99}');
    expect((await answered)[0]).toEqual({ seq: 42 });
  });

  it('answers the writes still waiting as timed out when the batch times out, and ignores their late answers', async () => {
    const { nc, sent, answer } = fakeConnection();
    const publisher = new PubAckPublisher(nc);
    const answered = publisher.writeAll(
      [
        { subject: '$KV.b.alert.a', payload: '{}', expectedLastSubjectSeq: 0 },
        { subject: '$KV.b.alert.b', payload: '{}', expectedLastSubjectSeq: 0 },
      ],
      50,
    );
    await nextTurn();
    answer((sent[1] as Sent).reply, '{"stream":"KV_b","seq":5}');
    expect(await answered).toEqual([{ timeout: true }, { seq: 5 }]);
    answer((sent[0] as Sent).reply, '{"stream":"KV_b","seq":6}');
    expect(await answered).toEqual([{ timeout: true }, { seq: 5 }]);
  });

  it('answers every write waiting as timed out when the connection is abandoned', async () => {
    const { nc } = fakeConnection();
    const publisher = new PubAckPublisher(nc);
    const answered = publisher.writeAll(
      [{ subject: '$KV.b.alert.a', payload: '{}', expectedLastSubjectSeq: 3 }],
      60_000,
    );
    publisher.abandonAll();
    expect(await answered).toEqual([{ timeout: true }]);
  });

  it('resolves an empty batch at once', async () => {
    const { nc, sent } = fakeConnection();
    expect(await new PubAckPublisher(nc).writeAll([], 1000)).toEqual([]);
    await nextTurn();
    expect(sent).toEqual([]);
  });
});

describe("a PubAck's sequence, read from its bytes", () => {
  it('reads a successful PubAck', () => {
    expect(pubAckSeq(text.encode('{"stream":"KV_b","seq":12}'))).toBe(12);
    expect(pubAckSeq(text.encode('{"stream":"KV_b","seq":9007199254740991,"duplicate":true}'))).toBe(
      Number.MAX_SAFE_INTEGER,
    );
    expect(pubAckSeq(text.encode('{"stream":"KV_b","domain":"hub","seq":3}'))).toBe(3);
  });

  it('leaves anything else to be parsed: errors, other shapes, no sequence, sequences beyond exact numbers', () => {
    for (const body of [
      '{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"},"stream":"KV_b","seq":0}',
      '{"stream":"KV_b","seq":0,"error":{"code":503}}',
      '{"stream":"KV_b","seq":5,"error":{"code":503}}',
      '{"seq":5,"stream":"KV_b"}',
      '{"stream":"KV_b"}',
      '{"stream":"KV_b","seq":12x}',
      '{"stream":"KV_b","seq":"12"}',
      '{"stream":"KV_b","seq":90071992547409910}',
      '',
      'not json',
    ])
      expect(pubAckSeq(text.encode(body))).toBeUndefined();
  });
});
