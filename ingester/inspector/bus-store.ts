/**
 * Captures on the bus: the stream `INTAKE_INSPECT` (inspector.stream), subjects
 * `<inspector.subjectPrefix>.req.<namespace>.<integration>` for requests and `...att...` for
 * delivery attempts, one JSON message each. Whichever replica received a request writes it,
 * whichever delivered an event writes its attempts, and every replica reads the same list; a
 * replica's restart loses nothing.
 *
 * Bounds, kept by the server: max_age (inspector.maxAge), max_bytes (inspector.maxBytes, the
 * oldest go first), at most attemptsKept(200) messages per subject; and after every quarter of its
 * `keep` captures, an integration's subjects are trimmed to its own `keep` (a purge with keep), so
 * an integration holds at most about 1.25 x `keep` requests of at most one capture's size each.
 * Per namespace, each replica holds what it wrote to inspector.maxBytesPerNamespace and
 * inspector.maxBytes (written-ledger.ts): a namespace at its share gives up its own oldest.
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
import { WrittenLedger, type Written } from './written-ledger.js';
import { attemptsKept, withAttempts, type Integration, type InspectorStore, type RecordedAttempt } from './store.js';

const RETRY_ATTACH_MS = 2000;
const READ_WAIT_MS = 5000;
const MAX_TRIM_COUNTERS = 10_000;
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
  /** What this replica wrote, by namespace: the shares the bus cannot keep itself. */
  private readonly ledger: WrittenLedger;

  constructor(
    private readonly s: InspectorSettings,
    private readonly timeoutMs: number,
    private readonly replicas: number,
    logger: Logger,
  ) {
    this.logs = new LogLimiter(logger);
    this.ledger = new WrittenLedger(s);
  }

  /** The bus is up on `nc` (first connect or a new connection): set up the stream. */
  attach(nc: NatsConnection): void {
    if (this.closing || nc === this.nc) return;
    this.nc = nc;
    void this.attachTo(nc);
  }

  put(c: CapturedRequest, keep: number): void {
    const data = encoder.encode(JSON.stringify(c));
    if (data.length > this.maxPayload || !this.js) return;
    const reserved = this.ledger.reserve(c.namespace, data.length);
    if (!reserved) return;
    for (const w of reserved.evicted) this.deleteWritten(w);
    const subject = this.subject('req', c);
    void this.publish(subject, data, reserved.written).then(() =>
      this.trimDue(subject, keep) ? this.trim(c, keep) : undefined,
    );
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
    void this.write(this.subject('att', where), encoder.encode(JSON.stringify(a)));
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
  }

  /** Subject tokens: names never hold dots (route.schema.json), so one token each. */
  private subject(kind: 'req' | 'att', w: Integration): string {
    return `${this.s.subjectPrefix}.${kind}.${w.namespace}.${w.integration}`;
  }

  /** Best effort: a capture the bus does not take is logged (rate-limited) and left out. */
  private async write(subject: string, data: Uint8Array): Promise<void> {
    try {
      await this.js?.publish(subject, data);
    } catch (err) {
      this.logs.error('inspector-write', err, { stream: this.s.stream }, 'inspector capture not kept on the bus');
    }
  }

  /** A capture, charged to its namespace (the ledger): its sequence kept, to give it up later. */
  private async publish(subject: string, data: Uint8Array, written: Written): Promise<void> {
    try {
      const ack = await (this.js as JetStreamClient).publish(subject, data);
      written.seq = ack.seq;
      if (written.evicted) this.deleteWritten(written);
    } catch (err) {
      this.ledger.release(written);
      this.logs.error('inspector-write', err, { stream: this.s.stream }, 'inspector capture not kept on the bus');
    }
  }

  /** Gives up a capture this replica wrote (its namespace needs the room); one not acknowledged yet goes when it is. */
  private deleteWritten(w: Written): void {
    if (w.seq === undefined) return;
    // Already gone (trimmed, aged out) is fine.
    void this.jsm?.streams.deleteMessage(this.s.stream, w.seq, false).catch(() => undefined);
  }

  /** Bytes this replica's captures hold on the bus, in all or by one namespace (written-ledger.ts). */
  bytes(namespace?: string): number {
    return this.ledger.bytes(namespace);
  }

  private async attachTo(nc: NatsConnection): Promise<void> {
    while (!this.closing && this.nc === nc && !nc.isClosed()) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: this.timeoutMs });
        await this.ensureStream(jsm);
        this.maxPayload = nc.info?.max_payload ?? this.maxPayload;
        this.jsm = jsm;
        this.js = jetstream(nc, { timeout: this.timeoutMs });
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
      max_bytes: this.s.maxBytes,
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
