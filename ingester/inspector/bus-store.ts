/**
 * Captures on the bus: the stream `INTAKE_INSPECT` (inspector.stream), subjects
 * `<inspector.subjectPrefix>.req.<namespace>.<integration>` for requests and `...att...` for
 * delivery attempts, one JSON message each. Whichever replica received a request writes it,
 * whichever delivered an event writes its attempts, and every replica reads the same list; a
 * replica's restart loses nothing.
 *
 * Bounds, kept by the server: max_age (inspector.maxAge), at most attemptsKept(200) messages per
 * subject; and after every quarter of its `keep` captures, an integration's subjects are trimmed to
 * its own `keep` (a purge with keep), so an integration holds at most about 1.25 x `keep` requests
 * of at most one capture's size each.
 *
 * Shares: every replica follows the stream's headers (an ordered consumer, headers only) into a
 * StreamLedger (stream-ledger.ts), so inspector.maxBytesPerNamespace and inspector.maxBytes bound
 * what all replicas wrote together, also across a restart. A capture or an attempt reserves its
 * bytes there before it is written; a namespace at its share gives up (deletes) its own oldest, and
 * so does one the follower finds past its share (replicas that wrote at once).
 * The stream's max_bytes (a quarter above inspector.maxBytes, the oldest go first) is only the
 * server's backstop should replicas' views differ for a moment.
 */
import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { MAX_INSPECT_REQUESTS, type CapturedRequest } from '../../api/inspector.js';
import { LogLimiter } from '../core/log-limiter.js';
import type { InspectorSettings } from './settings.js';
import { StreamLedger, type Held } from './stream-ledger.js';
import { attemptsKept, withAttempts, type Integration, type InspectorStore, type RecordedAttempt } from './store.js';

const RETRY_ATTACH_MS = 2000;
const READ_WAIT_MS = 5000;
const MAX_TRIM_COUNTERS = 10_000;
/** How often the ledger forgets what other replicas trimmed or deleted, and what aged out. */
const RECONCILE_MS = 5000;
/** How long the first put waits for the ledger to read what the stream holds. */
const CATCH_UP_WAIT_MS = 5000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class BusInspectorStore implements InspectorStore {
  private js?: JetStreamClient;
  private jsm?: JetStreamManager;
  private nc?: NatsConnection;
  private maxPayload = 1024 * 1024;
  private closing = false;
  private readonly logs: LogLimiter;
  /** Captures written per request subject since its last trim. */
  private readonly sinceTrim = new Map<string, number>();
  /** What the stream holds, by namespace (every replica's): the shares the bus cannot keep itself. */
  private readonly ledger: StreamLedger;
  private stopFollow?: () => void;
  private reconcileTimer?: NodeJS.Timeout;

  constructor(
    private readonly s: InspectorSettings,
    private readonly timeoutMs: number,
    private readonly replicas: number,
    logger: Logger,
  ) {
    this.logs = new LogLimiter(logger);
    this.ledger = new StreamLedger(s);
  }

  /** The bus is up on `nc` (first connect or a new connection): set up the stream. */
  attach(nc: NatsConnection): void {
    if (this.closing || nc === this.nc) return;
    this.nc = nc;
    void this.attachTo(nc);
  }

  put(c: CapturedRequest, keep: number): void {
    const subject = this.subject('req', c);
    const written = this.write(c.namespace, subject, encoder.encode(JSON.stringify(c)));
    void written?.then((kept) => (kept && this.trimDue(subject, keep) ? this.trim(c, keep) : undefined));
  }

  /**
   * Trimming costs two requests to the bus: done after every quarter of `keep` captures, so an
   * integration briefly holds up to a quarter more than `keep` (list shows `keep` only).
   */
  private trimDue(subject: string, keep: number): boolean {
    const since = (this.sinceTrim.get(subject) ?? 0) + 1;
    const due = since >= Math.max(1, Math.floor(keep / 4));
    if (due) this.sinceTrim.delete(subject);
    else {
      // Bounded: forgetting a count only trims an integration sooner.
      if (this.sinceTrim.size >= MAX_TRIM_COUNTERS) this.sinceTrim.clear();
      this.sinceTrim.set(subject, since);
    }
    return due;
  }

  private trim(w: Integration, keep: number): Promise<unknown> {
    return Promise.all([
      this.jsm?.streams.purge(this.s.stream, { filter: this.subject('req', w), keep }),
      this.jsm?.streams.purge(this.s.stream, { filter: this.subject('att', w), keep: attemptsKept(keep) }),
    ]);
  }

  attempt(where: Integration, a: RecordedAttempt): void {
    void this.write(where.namespace, this.subject('att', where), encoder.encode(JSON.stringify(a)));
  }

  async list(where: Integration, keep: number): Promise<CapturedRequest[]> {
    const js = this.js;
    if (!js) throw new Error('the bus is not connected; the inspector reads its stream there');
    const reqSubject = this.subject('req', where);
    const consumer = await js.consumers.get(this.s.stream, {
      filter_subjects: [reqSubject, this.subject('att', where)],
    });
    const pending = (await consumer.info()).num_pending;
    const captures: CapturedRequest[] = [];
    const attempts: RecordedAttempt[] = [];
    if (pending > 0) {
      const messages = await consumer.fetch({ max_messages: pending, expires: READ_WAIT_MS });
      let read = 0;
      for await (const m of messages) {
        const value = JSON.parse(decoder.decode(m.data)) as unknown;
        if (m.subject === reqSubject) captures.push(value as CapturedRequest);
        else attempts.push(value as RecordedAttempt);
        if (++read >= pending) break;
      }
    }
    await consumer.delete().catch(() => undefined);
    return withAttempts(captures.slice(-keep).reverse(), attempts);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.stopFollow?.();
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
  }

  /** Subject tokens: names never hold dots (route.schema.json), so one token each. */
  private subject(kind: 'req' | 'att', w: Integration): string {
    return `${this.s.subjectPrefix}.${kind}.${w.namespace}.${w.integration}`;
  }

  /**
   * A capture or an attempt, its bytes reserved from its namespace's share (the ledger) before it
   * is written, making room by deleting the namespace's own oldest. Undefined when nothing is
   * written (no bus yet, or larger than a share or a message); else resolves true once the stream
   * kept it. Best effort: one the bus does not take is logged (rate-limited) and left out.
   */
  private write(namespace: string, subject: string, data: Uint8Array): Promise<boolean> | undefined {
    const js = this.js;
    if (data.length > this.maxPayload || !js) return undefined;
    const reserved = this.ledger.reserve(namespace, subject, data.length);
    if (!reserved) return undefined;
    for (const h of reserved.evicted) this.deleteHeld(h);
    return this.publish(js, subject, data, reserved.held);
  }

  private async publish(js: JetStreamClient, subject: string, data: Uint8Array, held: Held): Promise<boolean> {
    try {
      const ack = await js.publish(subject, data);
      this.ledger.settle(held, ack.seq);
      if (held.evicted) this.deleteHeld(held);
      return true;
    } catch (err) {
      this.ledger.release(held);
      this.logs.error('inspector-write', err, { stream: this.s.stream }, 'inspector capture not kept on the bus');
      return false;
    }
  }

  /** Gives up a message (its namespace needs the room); one not acknowledged yet goes when it is. */
  private deleteHeld(h: Held): void {
    if (h.seq === undefined) return;
    // Already gone (trimmed, aged out, deleted by another replica) is fine.
    void this.jsm?.streams.deleteMessage(this.s.stream, h.seq, false).catch(() => undefined);
  }

  /** Bytes the stream holds (as far as this replica knows), in all or by one namespace (stream-ledger.ts). */
  bytes(namespace?: string): number {
    return this.ledger.bytes(namespace);
  }

  /** Reads every message's headers into the ledger, then keeps following new ones (any replica's). */
  private async follow(js: JetStreamClient, jsm: JetStreamManager): Promise<void> {
    this.stopFollow?.();
    const consumer = await js.consumers.get(this.s.stream, { headers_only: true });
    const messages = await consumer.consume();
    this.stopFollow = () => void messages.stop();
    let caughtUp: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (caughtUp = resolve));
    if ((await jsm.streams.info(this.s.stream)).state.messages === 0) caughtUp();
    const prefix = `${this.s.subjectPrefix}.`;
    void (async () => {
      for await (const m of messages) {
        // <prefix>.<req|att>.<namespace>.<integration>
        const namespace = m.subject.slice(prefix.length).split('.')[1];
        if (namespace) {
          const evicted = this.ledger.add({
            seq: m.seq,
            subject: m.subject,
            namespace,
            bytes: Number(m.headers?.get('Nats-Msg-Size')) || 0,
            atMs: Math.floor(m.info.timestampNanos / 1e6),
          });
          for (const h of evicted) this.deleteHeld(h);
        }
        if (m.info.pending === 0) caughtUp();
      }
    })().catch(() => undefined);
    // Writes wait until the ledger caught up (bounded: the stream's max_bytes still bounds them).
    await Promise.race([done, new Promise((r) => setTimeout(r, CATCH_UP_WAIT_MS).unref())]);
  }

  /** Forgets what the stream no longer holds (other replicas' trims and deletions, max_age). */
  async reconcile(): Promise<void> {
    const jsm = this.jsm;
    if (!jsm) return;
    const info = await jsm.streams.info(this.s.stream, { subjects_filter: `${this.s.subjectPrefix}.>` });
    this.ledger.reconcile(info.state.first_seq, info.state.last_seq, info.state.subjects ?? {});
  }

  private async attachTo(nc: NatsConnection): Promise<void> {
    while (!this.closing && this.nc === nc && !nc.isClosed()) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: this.timeoutMs });
        await this.ensureStream(jsm);
        this.maxPayload = nc.info?.max_payload ?? this.maxPayload;
        const js = jetstream(nc, { timeout: this.timeoutMs });
        await this.follow(js, jsm);
        this.jsm = jsm;
        this.js = js;
        this.reconcileTimer ??= setInterval(() => void this.reconcile().catch(() => undefined), RECONCILE_MS);
        this.reconcileTimer.unref();
        return;
      } catch (err) {
        this.logs.error('inspector-attach', err, { stream: this.s.stream }, 'inspector stream not ready; trying again');
        await new Promise((r) => setTimeout(r, RETRY_ATTACH_MS).unref());
      }
    }
  }

  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const config = {
      max_age: nanos(this.s.maxAgeMs),
      // The server's backstop: above the shares' whole, so that normally the ledger decides what goes.
      max_bytes: Math.floor(this.s.maxBytes * 1.25),
      max_msgs_per_subject: attemptsKept(MAX_INSPECT_REQUESTS),
    };
    const info = await jsm.streams.info(this.s.stream).catch(() => undefined);
    if (info) {
      const c = info.config;
      if (c.max_age !== config.max_age || c.max_bytes !== config.max_bytes)
        await jsm.streams.update(this.s.stream, { ...c, ...config });
      return;
    }
    await jsm.streams.add({
      name: this.s.stream,
      subjects: [`${this.s.subjectPrefix}.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      // Inspection never blocks intake: past max_bytes the oldest captures go.
      discard: DiscardPolicy.Old,
      num_replicas: this.replicas,
      ...config,
    });
  }
}
