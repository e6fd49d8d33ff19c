/**
 * The dead letters on the bus: the stream `INTAKE_DEADLETTER` (settings sinks.jetstream.deadLetter*),
 * subjects `<deadLetterSubjectPrefix>.<kind>.<namespace>`, one message per letter: the body
 * (payload or event) as data, the rest in `Intake-*` headers. Every replica reads and replays the
 * same letters, and they survive the pod.
 *
 * Shares: each replica follows the stream's headers (an ordered consumer, headers only) into a
 * ShareLedger, and makes room for a new letter by deleting the oldest of its namespace (shares.ts)
 * before publishing it. Letters other replicas removed leave the ledger at the next reconcile
 * (the stream's first sequence and deleted list). The stream's own max_bytes (maxBytes plus a
 * quarter, discard old) is the server-side backstop should replicas' views differ for a moment.
 *
 * Claims: a key-value bucket `<deadLetterStream>-claims` whose entries expire after the replay
 * lease. Creating the key `seq-<n>` succeeds for one replay only, in whichever replica.
 *
 * A replay ends by removing its letter and then its claim (or only the claim when it failed),
 * within one hand-on's time, so the bucket holds the replays under way. A claim older than that whose letter is still kept is a replay that was cut
 * (kill -9 of its process): its letter may be on the events stream already, and would stay listed
 * until someone replays it again. interruptedReplays finds those, in any replica, and takes them
 * over (a compare-and-set on the entry's revision, so one replica does), to be finished.
 */
import { randomUUID } from 'node:crypto';
import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StoredMsg,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { headers as natsHeaders, nanos, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { FieldError } from '../core/errors.js';
import type { NormalisedEvent } from '../core/event.js';
import type { JetStreamSettings } from '../sinks/handoff-config.js';
import { subjectsOf } from '../sinks/jetstream-stream.js';
import {
  atMsOf,
  bodyOf,
  indexedReason,
  letterBytes,
  LetterTooLarge,
  metaOf,
  type DeadLetter,
  type DeadLetterLimits,
  type DeadLetterQuery,
  type DeadLetterStore,
  type DroppedLetter,
  type LetterMeta,
  type NewDeadLetter,
} from './model.js';
import { ShareLedger } from './shares.js';

/** Header names of a dead letter. */
export const LETTER_HEADER = {
  id: 'Intake-Id',
  kind: 'Intake-Kind',
  namespace: 'Intake-Namespace',
  integration: 'Intake-Integration',
  destination: 'Intake-Destination',
  reason: 'Intake-Reason',
  error: 'Intake-Error',
  errors: 'Intake-Errors',
  attempts: 'Intake-Attempts',
  at: 'Intake-Failed-At',
  subject: 'Intake-Subject',
  contentType: 'Intake-Content-Type',
  bytes: 'Intake-Bytes',
} as const;

/** Header values cannot hold line breaks; the error text of a receiver may. */
export const oneLine = (text: string, max = 1024): string => text.replace(/[\r\n]+/g, ' ').slice(0, max);

const RECONCILE_MS = 15_000;
const CATCH_UP_WAIT_MS = 10_000;
const RETRY_ATTACH_MS = 2000;
/** How long readiness waits for the dead-letter stream to open after the bus first connected. */
export const FIRST_OPEN_WAIT_MS = 15_000;
/** A claim this old whose letter is still kept belongs to a replay that was cut (see interruptedReplays). */
const MIN_STALE_CLAIM_MS = 10_000;
/** Placeholders for letters being published sort after every real sequence (newest). */
const PENDING_BASE = 2 ** 52;
const decoder = new TextDecoder();

export class BusDeadLetters implements DeadLetterStore {
  readonly description: string;
  private readonly ledger: ShareLedger;
  private js?: JetStreamClient;
  private jsm?: JetStreamManager;
  private claims?: KV;
  private nc?: NatsConnection;
  private maxPayload = 1024 * 1024;
  private pending = 0;
  private closing = false;
  private stopFollow?: () => void;
  private reconcileTimer?: NodeJS.Timeout;
  private readonly holder = randomUUID();
  /** Why the last try to set up the stream on the connected bus failed (cleared once it is open). */
  private attachProblem?: string;
  /** Once the stream has opened on some connection, readiness no longer waits for it. */
  private openedOnce = false;
  /** When the bus first connected: readiness waits for the stream at most FIRST_OPEN_WAIT_MS from then. */
  private firstConnectedMs?: number;

  constructor(
    private readonly settings: JetStreamSettings,
    limits: DeadLetterLimits,
    private readonly leaseMs: number,
    private readonly logger: Logger,
    private readonly onDropped: (dropped: DroppedLetter[]) => void = () => undefined,
  ) {
    this.ledger = new ShareLedger(limits);
    this.description = `stream ${settings.deadLetterStream} on the bus`;
  }

  /** The bus is up on `nc` (first connect or a new connection): set up the stream, claims and the index. */
  attach(nc: NatsConnection): void {
    if (this.closing || nc === this.nc) return;
    this.nc = nc;
    this.firstConnectedMs ??= Date.now();
    void this.attachTo(nc);
  }

  private async attachTo(nc: NatsConnection): Promise<void> {
    while (!this.closing && this.nc === nc && !nc.isClosed()) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: this.settings.timeoutMs });
        const js = jetstream(nc, { timeout: this.settings.timeoutMs });
        await this.ensureStream(jsm);
        const bucket = `${this.settings.deadLetterStream}-claims`;
        const kvm = new Kvm(js);
        this.claims = await kvm
          .create(bucket, {
            history: 1,
            ttl: this.leaseMs,
            replicas: this.settings.streamConfig.replicas,
            storage: StorageType.File,
          })
          .catch(() => kvm.open(bucket));
        this.maxPayload = nc.info?.max_payload ?? this.maxPayload;
        this.jsm = jsm;
        this.js = js;
        await this.follow(js, jsm);
        this.startReconcile();
        this.attachProblem = undefined;
        this.openedOnce = true;
        return;
      } catch (err) {
        this.attachProblem = (err as Error).message;
        this.logger.error(
          { err: { message: (err as Error).message }, retryInMs: RETRY_ATTACH_MS },
          'dead-letter stream not ready; trying again',
        );
        await new Promise((r) => setTimeout(r, RETRY_ATTACH_MS).unref());
      }
    }
  }

  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const name = this.settings.deadLetterStream;
    // The server's bound: above the shares' total, so that normally intake's policy decides what goes.
    const maxBytes = Math.floor(this.ledger.limits.maxBytes * 1.25);
    const info = await jsm.streams.info(name).catch(() => undefined);
    if (info) {
      if (info.config.max_bytes !== maxBytes) await jsm.streams.update(name, { ...info.config, max_bytes: maxBytes });
      return;
    }
    await jsm.streams.add({
      name,
      subjects: [subjectsOf(this.settings.deadLetterSubjectPrefix)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      // A dead letter must never block intake: past max_bytes the oldest go (intake drops by share before that).
      discard: DiscardPolicy.Old,
      max_age: nanos(this.settings.deadLetterMaxAgeSeconds * 1000),
      max_bytes: maxBytes,
      num_replicas: this.settings.streamConfig.replicas,
    });
  }

  /** Reads every letter's headers into the ledger, then keeps following new ones (any replica's). */
  private async follow(js: JetStreamClient, jsm: JetStreamManager): Promise<void> {
    this.stopFollow?.();
    const consumer = await js.consumers.get(this.settings.deadLetterStream, { headers_only: true });
    const messages = await consumer.consume();
    this.stopFollow = () => void messages.stop();
    let caughtUp: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (caughtUp = resolve));
    const initial = (await jsm.streams.info(this.settings.deadLetterStream)).state.messages;
    if (initial === 0) caughtUp();
    void (async () => {
      for await (const m of messages) {
        try {
          const meta = metaFromHeaders(m.seq, m.headers);
          if (meta && !this.ledger.has(m.seq)) this.ledger.add(meta);
        } catch (err) {
          this.logger.warn({ err: { message: (err as Error).message }, seq: m.seq }, 'dead letter not indexed');
        }
        if (m.info.pending === 0) caughtUp();
      }
    })().catch(() => undefined);
    // Puts work before the ledger caught up (the stream's max_bytes still bounds them); do not wait forever.
    await Promise.race([done, new Promise((r) => setTimeout(r, CATCH_UP_WAIT_MS).unref())]);
  }

  private startReconcile(): void {
    if (this.reconcileTimer) return;
    this.reconcileTimer = setInterval(() => void this.reconcile().catch(() => undefined), RECONCILE_MS);
    this.reconcileTimer.unref();
  }

  /** Letters removed elsewhere (another replica's replay, max_age, the server's max_bytes) leave the ledger. */
  async reconcile(): Promise<void> {
    const jsm = this.jsm;
    if (!jsm) return;
    const info = await jsm.streams.info(this.settings.deadLetterStream, { deleted_details: true });
    const deleted = new Set(info.state.deleted ?? []);
    for (const m of this.ledger.all())
      if (m.seq < PENDING_BASE && (m.seq < info.state.first_seq || deleted.has(m.seq)))
        this.ledger.delete(m.seq, m.namespace);
  }

  async put(input: NewDeadLetter): Promise<string> {
    const js = this.js;
    const jsm = this.jsm;
    if (!js || !jsm) throw new Error(`${this.notOpen()}; the dead letter cannot be written now`);
    const letter = {
      ...input,
      id: input.id ?? randomUUID(),
      at: input.at ?? new Date().toISOString(),
      seq: 0,
      bytes: 0,
    } as DeadLetter;
    letter.bytes = letterBytes(letter);
    const data = JSON.stringify(bodyOf(letter));
    const h = headersOf(letter);
    const wireBytes = Buffer.byteLength(data) + headerBytes(h);
    let room: ReturnType<ShareLedger['makeRoom']>;
    try {
      if (wireBytes > this.maxPayload) throw new LetterTooLarge(wireBytes, this.maxPayload);
      // Room is made and the letter reserved before any await: concurrent puts never pick the same victims.
      room = this.ledger.makeRoom(letter.namespace, letter.bytes);
    } catch (err) {
      this.onDropped([{ kind: letter.kind, namespace: letter.namespace, reason: 'too_large' }]);
      throw err;
    }
    for (const { meta } of room) this.ledger.delete(meta.seq, meta.namespace);
    const placeholder = PENDING_BASE + this.pending++;
    this.ledger.add({ ...metaOf(letter), seq: placeholder });
    try {
      // A victim another replica removed already (this ledger learns of that only at the next
      // reconcile) freed nothing: make room again until every deletion freed something.
      for (let round = 0; room.length > 0 && round < 10; round++) {
        const freed = await Promise.all(
          room.map(({ meta }) => (meta.seq < PENDING_BASE ? this.deleteLetter(jsm, meta.seq) : false)),
        );
        const dropped = room
          .filter((_, i) => freed[i])
          .map(({ meta, reason }) => ({ kind: meta.kind, namespace: meta.namespace, reason }));
        if (dropped.length > 0) this.onDropped(dropped);
        if (freed.every(Boolean)) break;
        room = this.ledger.makeRoom(letter.namespace, 0);
        for (const { meta } of room) this.ledger.delete(meta.seq, meta.namespace);
      }
      // A letter given its id (an event's delivery letter) is not deduplicated by it: the stream
      // would keep the earlier letter, which a replay running now may be removing. Instead an
      // earlier letter with the same id goes once this one is kept, so the event refused again (or
      // redelivered after a crash) leaves one letter.
      const ack = await js.publish(
        `${this.settings.deadLetterSubjectPrefix}.${letter.kind}.${letter.namespace}`,
        data,
        { ...(input.id === undefined ? { msgID: letter.id } : {}), headers: h },
      );
      this.ledger.delete(placeholder, letter.namespace);
      if (!this.ledger.has(ack.seq)) this.ledger.add({ ...metaOf(letter), seq: ack.seq });
      if (input.id !== undefined) await this.removeOlder(jsm, letter, ack.seq);
      return letter.id;
    } catch (err) {
      this.ledger.delete(placeholder, letter.namespace);
      throw err;
    }
  }

  /** Letters with the same id as the one just kept at `seq`, older than it, go. */
  private async removeOlder(jsm: JetStreamManager, letter: DeadLetter, seq: number): Promise<void> {
    for (const older of this.ledger.withId(letter.namespace, letter.id)) {
      if (older.seq >= seq || older.seq >= PENDING_BASE) continue;
      await this.deleteLetter(jsm, older.seq);
      this.ledger.delete(older.seq, older.namespace);
    }
  }

  /** True when the message was there and is deleted now; false when it was gone already. */
  private async deleteLetter(jsm: JetStreamManager, seq: number): Promise<boolean> {
    try {
      return await jsm.streams.deleteMessage(this.settings.deadLetterStream, seq, false);
    } catch (err) {
      if (/no message found|not found/i.test((err as Error).message)) return false;
      throw err;
    }
  }

  async list(q: DeadLetterQuery): Promise<DeadLetter[]> {
    const jsm = this.requireJsm();
    const out: DeadLetter[] = [];
    for (const m of this.select(q)) {
      const letter = await this.read(jsm, m.seq);
      if (letter) out.push(letter);
    }
    return out;
  }

  /** Letters being published (placeholders) are left out: they have no position on the stream yet. */
  select(q: DeadLetterQuery): LetterMeta[] {
    this.requireJsm();
    return this.ledger.select({ ...q, maxSeq: Math.min(q.maxSeq ?? Infinity, PENDING_BASE - 1) });
  }

  census(q: DeadLetterQuery): { matched: number; lastSeq: number } {
    // Not open yet, the index may be empty: "0 matched" would be wrong.
    this.requireJsm();
    return this.ledger.census({ ...q, maxSeq: Math.min(q.maxSeq ?? Infinity, PENDING_BASE - 1) });
  }

  private async read(jsm: JetStreamManager, seq: number): Promise<DeadLetter | undefined> {
    const msg = await jsm.streams.getMessage(this.settings.deadLetterStream, { seq }).catch(() => null);
    return msg ? toLetter(msg) : undefined;
  }

  async claim(letter: Pick<DeadLetter, 'seq'>, _leaseMs: number): Promise<DeadLetter | undefined> {
    const jsm = this.requireJsm();
    const claims = this.claims as KV;
    try {
      await claims.create(claimKey(letter), this.holder);
    } catch {
      return undefined;
    }
    // Claimed: read it again, since another replica may have replayed and removed it meanwhile.
    const current = await this.read(jsm, letter.seq);
    if (!current) await this.release(letter);
    return current;
  }

  async release(letter: Pick<DeadLetter, 'seq'>): Promise<void> {
    await this.claims?.delete(claimKey(letter)).catch(() => undefined);
  }

  async remove(letter: DeadLetter): Promise<void> {
    const jsm = this.requireJsm();
    await this.deleteLetter(jsm, letter.seq);
    this.ledger.delete(letter.seq, letter.namespace);
  }

  async *interruptedReplays(): AsyncIterable<DeadLetter> {
    const claims = this.claims;
    const jsm = this.jsm;
    if (!claims || !jsm) return;
    const staleMs = Math.max(MIN_STALE_CLAIM_MS, 4 * this.settings.timeoutMs);
    const keys: string[] = [];
    for await (const key of await claims.keys()) keys.push(key);
    for (const key of keys) {
      const seq = /^seq-(\d+)$/.exec(key)?.[1];
      const entry = seq ? await claims.get(key).catch(() => null) : null;
      if (!entry || entry.operation !== 'PUT' || Date.now() - entry.created.getTime() < staleMs) continue;
      const letter = await this.read(jsm, Number(seq));
      // Replayed and removed, only the claim was left: nothing to finish.
      if (!letter) {
        await claims.delete(key).catch(() => undefined);
        continue;
      }
      try {
        await claims.update(key, this.holder, entry.revision);
      } catch {
        continue; // another replica took it over first
      }
      yield letter;
    }
  }

  usage(): { bytes: number; namespaces: ReadonlyMap<string, number> } {
    return { bytes: this.ledger.bytes, namespaces: this.ledger.namespaces() };
  }

  private requireJsm(): JetStreamManager {
    if (!this.jsm) throw new Error(`${this.notOpen()}; dead letters cannot be read now`);
    return this.jsm;
  }

  /**
   * Readiness, just after the start: the bus is connected and the stream is being set up. Until it
   * opens, a payload that cannot be mapped would be answered 503 (it cannot be kept) and an event a
   * destination refused would come back to be delivered again, so the replica waits, as it waits
   * for its routes. Only for the first opening and at most FIRST_OPEN_WAIT_MS: a stream the server
   * keeps refusing (every replica alike) must not take every replica out of the Service; that is
   * logged and each refused write says why. While the bus is down the sink speaks for it.
   */
  unavailable(): string | undefined {
    if (this.openedOnce || this.closing || !this.nc || this.nc.isClosed()) return undefined;
    if (Date.now() - (this.firstConnectedMs ?? 0) > FIRST_OPEN_WAIT_MS) return undefined;
    return this.notOpen();
  }

  /**
   * Why the letters cannot be used: the bus is down, or it is up and the stream is not set up on it
   * yet (just after the start or a reconnection, or a stream the server refuses): saying "not
   * connected" then would send an operator to the wrong place.
   */
  private notOpen(): string {
    if (!this.nc || this.nc.isClosed()) return 'the bus is not connected';
    return `the dead-letter stream ${this.settings.deadLetterStream} is not open on the bus yet (${this.attachProblem ?? 'being set up'})`;
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.reconcileTimer);
    this.stopFollow?.();
  }
}

const claimKey = (l: Pick<DeadLetter, 'seq'>): string => `seq-${l.seq}`;

function headersOf(l: DeadLetter): MsgHdrs {
  const h = natsHeaders();
  h.set(LETTER_HEADER.id, l.id);
  h.set(LETTER_HEADER.kind, l.kind);
  h.set(LETTER_HEADER.namespace, l.namespace);
  h.set(LETTER_HEADER.integration, l.integration);
  h.set(LETTER_HEADER.reason, oneLine(l.reason, 2048));
  h.set(LETTER_HEADER.at, l.at);
  h.set(LETTER_HEADER.bytes, String(l.bytes));
  if (l.kind === 'mapping') {
    if (l.contentType) h.set(LETTER_HEADER.contentType, oneLine(l.contentType, 256));
    if (l.errors) h.set(LETTER_HEADER.errors, JSON.stringify(l.errors).slice(0, 8192));
  } else {
    h.set(LETTER_HEADER.destination, l.destination);
    h.set(LETTER_HEADER.error, oneLine(l.error));
    h.set(LETTER_HEADER.attempts, String(l.attempts));
    if (l.subject) h.set(LETTER_HEADER.subject, l.subject);
  }
  return h;
}

const headerBytes = (h: MsgHdrs): number =>
  [...h.keys()].reduce((n, k) => n + k.length + Buffer.byteLength(h.get(k)) + 4, 12);

/** A letter's metadata from its headers alone; a message without a letter's kind and namespace is not one. */
function metaFromHeaders(seq: number, h: MsgHdrs | undefined): LetterMeta | undefined {
  const get = (k: string): string => h?.get(k) ?? '';
  const kind = get(LETTER_HEADER.kind);
  if ((kind !== 'mapping' && kind !== 'delivery') || !get(LETTER_HEADER.namespace)) return undefined;
  return {
    seq,
    id: get(LETTER_HEADER.id) || `seq-${seq}`,
    kind,
    namespace: get(LETTER_HEADER.namespace),
    integration: get(LETTER_HEADER.integration),
    ...(get(LETTER_HEADER.destination) ? { destination: get(LETTER_HEADER.destination) } : {}),
    bytes: Number(get(LETTER_HEADER.bytes)) || Number(get('Nats-Msg-Size')) || 0,
    atMs: atMsOf(get(LETTER_HEADER.at)),
    reason: indexedReason(get(LETTER_HEADER.reason)),
  };
}

function toLetter(msg: StoredMsg): DeadLetter | undefined {
  const get = (k: string): string => msg.header.get(k);
  try {
    const body = JSON.parse(decoder.decode(msg.data)) as unknown;
    const common = {
      id: get(LETTER_HEADER.id) || `seq-${msg.seq}`,
      seq: msg.seq,
      reason: get(LETTER_HEADER.reason),
      at: get(LETTER_HEADER.at) || msg.time.toISOString(),
      bytes: Number(get(LETTER_HEADER.bytes)) || msg.data.length,
    };
    if (get(LETTER_HEADER.kind) === 'mapping') {
      const errors = get(LETTER_HEADER.errors);
      return {
        ...common,
        kind: 'mapping',
        namespace: get(LETTER_HEADER.namespace),
        integration: get(LETTER_HEADER.integration),
        payload: body,
        ...(errors ? { errors: parseErrors(errors) } : {}),
        ...(get(LETTER_HEADER.contentType) ? { contentType: get(LETTER_HEADER.contentType) } : {}),
      };
    }
    if (get(LETTER_HEADER.kind) !== 'delivery') return undefined;
    return {
      ...common,
      kind: 'delivery',
      namespace: get(LETTER_HEADER.namespace),
      integration: get(LETTER_HEADER.integration),
      destination: get(LETTER_HEADER.destination),
      error: get(LETTER_HEADER.error),
      attempts: Number(get(LETTER_HEADER.attempts)) || 0,
      ...(get(LETTER_HEADER.subject) ? { subject: get(LETTER_HEADER.subject) } : {}),
      event: body as NormalisedEvent,
    };
  } catch {
    return undefined;
  }
}

function parseErrors(text: string): FieldError[] | undefined {
  try {
    return JSON.parse(text) as FieldError[];
  } catch {
    return undefined; // cut at the header bound
  }
}
