/**
 * JetStream publishes with PubAcks collected on one inbox subscription. A JetStream publish is a
 * core NATS publish with a reply subject; the stream answers on it with a PubAck. The client's
 * `js.publish` does the same through a request per message, each with its own timer and promise
 * chain: measured here (loopback nats-server 2.12, 100 in flight) it cost about 38 us of CPU per
 * event against about 9 us for this (one subscription, one timer per request), and four times
 * the CPU at 1000 in flight. On the request path that difference is most of the ingester's budget.
 *
 * Publishes of every request within one event-loop turn go out together (setImmediate), so the
 * client writes them to the socket in one system call instead of one per request.
 *
 * Each batch resolves once every event has an answer or the batch's single timer fires (then
 * the rest count as not acknowledged, outcome unknown: the caller spools them under the same
 * msg id, and the stream's duplicate window stores them once).
 *
 * write() is the same for one conditional write (an alert state in a key-value bucket, with
 * Nats-Expected-Last-Subject-Sequence): it resolves with the sequence the stream stored it at, or
 * the error it refused it with. nats.js's request path builds Error objects with stack traces for
 * every request, even a successful one; on the delivery path to Alertmanager that was the largest
 * single cost.
 */
import { createInbox, headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { TraceCarrier } from '../tracing/carrier.js';

/** What the bus said about one event. */
export type PubOutcome = 'acked' | 'timeout' | 'refused';

/** The stream's answer to one write: where it stored it, why it refused it, or no answer in time. */
export type WriteAnswer = { seq: number } | { code: number; description: string } | { timeout: true };

interface Pending {
  batch: Batch;
  index: number;
}

/** A message to send: an event of a batch (`pending`, its msg id) or a single write (`headers`). */
type Queued = { subject: string; payload: string; reply: string } & (
  { pending: Pending; id: string; trace?: TraceCarrier } | { pending?: undefined; headers: Record<string, string> }
);

interface Batch {
  outcomes: PubOutcome[];
  open: number;
  done: () => void;
}

const decoder = new TextDecoder();

export class PubAckPublisher {
  private readonly inbox = createInbox();
  private readonly pending = new Map<string, Pending>();
  private readonly writes = new Map<string, (answer: WriteAnswer) => void>();
  private readonly sub: Subscription;
  private seq = 0;
  private queue: Queued[] = [];
  private scheduled = false;
  /** The last refusal the stream gave (for the log), e.g. "maximum messages exceeded". */
  lastRefusal?: string;

  constructor(private readonly nc: NatsConnection) {
    this.sub = nc.subscribe(`${this.inbox}.*`, {
      callback: (_err, msg) => {
        const p = this.pending.get(msg.subject);
        if (p) {
          this.pending.delete(msg.subject);
          this.settle(p, this.outcomeOf(msg.data));
          return;
        }
        // Else a write's answer, or one that came after its batch or write timed out.
        this.writes.get(msg.subject)?.(answerOf(msg.data));
      },
    });
  }

  /**
   * Publishes every event with its id as Nats-Msg-Id; resolves with one outcome per event, at
   * the latest after timeoutMs. Never rejects.
   */
  publish(
    events: ReadonlyArray<{ subject: string; payload: string; id: string; trace?: TraceCarrier }>,
    timeoutMs: number,
  ): Promise<PubOutcome[]> {
    if (events.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const replies: string[] = [];
      const batch: Batch = {
        outcomes: new Array<PubOutcome>(events.length).fill('timeout'),
        open: events.length,
        done: () => {},
      };
      const timer = setTimeout(() => {
        for (const r of replies) this.pending.delete(r);
        resolve(batch.outcomes);
      }, timeoutMs);
      batch.done = () => {
        clearTimeout(timer);
        resolve(batch.outcomes);
      };
      for (let i = 0; i < events.length; i++) {
        const e = events[i] as { subject: string; payload: string; id: string; trace?: TraceCarrier };
        const reply = `${this.inbox}.${(this.seq++).toString(36)}`;
        const pending = { batch, index: i };
        replies.push(reply);
        this.pending.set(reply, pending);
        const queued: Queued = { subject: e.subject, payload: e.payload, id: e.id, reply, pending };
        if (e.trace) queued.trace = e.trace;
        this.queue.push(queued);
      }
      this.schedule();
    });
  }

  /** One write with `headers`; resolves with the stream's answer, at the latest after timeoutMs. Never rejects. */
  write(subject: string, payload: string, headers: Record<string, string>, timeoutMs: number): Promise<WriteAnswer> {
    return new Promise((resolve) => {
      const reply = `${this.inbox}.${(this.seq++).toString(36)}`;
      const done = (answer: WriteAnswer): void => {
        if (!this.writes.delete(reply)) return;
        clearTimeout(timer);
        resolve(answer);
      };
      const timer = setTimeout(() => done({ timeout: true }), timeoutMs);
      this.writes.set(reply, done);
      this.queue.push({ subject, payload, headers, reply });
      this.schedule();
    });
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.sendQueued());
    }
  }

  private sendQueued(): void {
    const queue = this.queue;
    this.queue = [];
    this.scheduled = false;
    for (const q of queue) {
      // Answered already (abandoned on a disconnect, or its batch or write timed out): do not send.
      if (q.pending ? this.pending.get(q.reply) !== q.pending : !this.writes.has(q.reply)) continue;
      const h = headers();
      if (q.pending) {
        h.set('Nats-Msg-Id', q.id);
        // The hand-off's W3C context, for the replica that delivers the message (tracing on).
        if (q.trace) {
          h.set('traceparent', q.trace.traceparent);
          if (q.trace.tracestate !== undefined) h.set('tracestate', q.trace.tracestate);
        }
      } else for (const [k, v] of Object.entries(q.headers)) h.set(k, v);
      try {
        this.nc.publish(q.subject, q.payload, { headers: h, reply: q.reply });
      } catch {
        // Closed or draining connection: this message is not on its way.
        if (q.pending) {
          this.pending.delete(q.reply);
          this.settle(q.pending, 'refused');
        } else this.writes.get(q.reply)?.({ code: 0, description: 'the connection is closed' });
      }
    }
  }

  /** The connection dropped: nothing in flight will be answered; let the callers spool now. */
  abandonAll(): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) this.settle(p, 'timeout');
    for (const done of [...this.writes.values()]) done({ timeout: true });
  }

  close(): void {
    this.abandonAll();
    this.sub.unsubscribe();
  }

  private settle(p: Pending, outcome: PubOutcome): void {
    p.batch.outcomes[p.index] = outcome;
    if (--p.batch.open === 0) p.batch.done();
  }

  /** A PubAck names its stream; an error or an empty status message (no responders) does not. */
  private outcomeOf(data: Uint8Array): PubOutcome {
    if (data.length === 0) {
      this.lastRefusal = 'no stream listens on the subject (no responders)';
      return 'refused';
    }
    try {
      const ack = JSON.parse(decoder.decode(data)) as { stream?: string; error?: { description?: string } };
      if (ack.error || !ack.stream) {
        this.lastRefusal = ack.error?.description ?? 'invalid PubAck';
        return 'refused';
      }
      return 'acked';
    } catch {
      this.lastRefusal = 'unparsable PubAck';
      return 'refused';
    }
  }
}

/** A PubAck's sequence, or the error the stream answered with. */
function answerOf(data: Uint8Array): WriteAnswer {
  if (data.length === 0) return { code: 503, description: 'no stream listens on the subject (no responders)' };
  try {
    const ack = JSON.parse(decoder.decode(data)) as {
      seq?: number;
      error?: { err_code?: number; code?: number; description?: string };
    };
    if (ack.error) return { code: ack.error.err_code ?? ack.error.code ?? 0, description: ack.error.description ?? '' };
    return typeof ack.seq === 'number' ? { seq: ack.seq } : { code: 0, description: 'invalid PubAck' };
  } catch {
    return { code: 0, description: 'unparsable PubAck' };
  }
}
