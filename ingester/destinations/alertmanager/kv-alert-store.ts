/**
 * Alert states in a JetStream key-value bucket (one per Alertmanager destination): every replica
 * sees the same states, writes are compare-and-set on the entry's revision, and the resend lease
 * and the per-namespace counts are entries too.
 *
 * A state is written as what a key-value update is on the wire, a publish to `$KV.<bucket>.<key>`
 * with Nats-Expected-Last-Subject-Sequence, through the PubAck publisher (sinks/pub-acks.ts)
 * rather than the client's request path, which costs several times the CPU per write. A batch's
 * states go out together (putAll: the publisher's writeAll, one promise and one timer for the
 * batch), each still its own compare-and-set, answered on its own.
 */
import type { KV } from '@nats-io/kv';
import type { PubAckPublisher, WriteAnswer } from '../../sinks/pub-acks.js';
import type { AlertState } from './alerts.js';
import type { AlertCounts, AlertStore, StateWrite, Versioned } from './alert-store.js';

/** The server's "wrong last sequence": someone else wrote the entry first. */
const WRONG_LAST_SEQUENCE = 10071;

const LEASE_KEY = 'lease.resend';
const STATE_PREFIX = 'alert.';
/** The lease holder's count of states per namespace, read by every replica for the caps. */
const COUNTS_KEY = 'counts';

export class KvAlertStore implements AlertStore {
  constructor(
    private readonly kv: KV,
    private readonly bucket: string,
    private readonly publisher: PubAckPublisher,
    private readonly timeoutMs: number,
  ) {}

  async get(key: string): Promise<Versioned | undefined> {
    const entry = await this.kv.get(STATE_PREFIX + key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { state: entry.json<AlertState>(), version: entry.revision };
  }

  async put(state: AlertState, version: number): Promise<number | false> {
    const key = STATE_PREFIX + state.key;
    const data = JSON.stringify(state);
    const written = await this.write(key, data, version);
    if (written !== false || version !== 0) return written;
    return this.createOverDeleted(key, data);
  }

  /**
   * Every state written at once, each compare-and-set on its own version and answered as put()
   * would be (an Error: that one was not written). A create that lost over a deleted entry is
   * written again over the delete marker, as put() does.
   */
  async putAll(writes: readonly StateWrite[]): Promise<Array<number | false | Error>> {
    const payloads = writes.map((w) => JSON.stringify(w.state));
    const answers = await this.publisher.writeAll(
      writes.map((w, i) => ({
        subject: `$KV.${this.bucket}.${STATE_PREFIX}${w.state.key}`,
        payload: payloads[i] as string,
        expectedLastSubjectSeq: w.version,
      })),
      this.timeoutMs,
    );
    const results: Array<number | false | Error> = [];
    let creates: Array<Promise<void>> | undefined;
    for (let i = 0; i < answers.length; i++) {
      let result: number | false | Error;
      try {
        result = this.answered(answers[i] as WriteAnswer);
      } catch (err) {
        result = err as Error;
      }
      results.push(result);
      if (result !== false || (writes[i] as StateWrite).version !== 0) continue;
      const key = STATE_PREFIX + (writes[i] as StateWrite).state.key;
      (creates ??= []).push(
        this.createOverDeleted(key, payloads[i] as string).then(
          (r) => void (results[i] = r),
          (err: unknown) => void (results[i] = err as Error),
        ),
      );
    }
    if (creates) await Promise.all(creates);
    return results;
  }

  private async write(key: string, data: string, version: number): Promise<number | false> {
    const answer = await this.publisher.write(
      `$KV.${this.bucket}.${key}`,
      data,
      { 'Nats-Expected-Last-Subject-Sequence': String(version) },
      this.timeoutMs,
    );
    return this.answered(answer);
  }

  /** A create's loss over a deleted entry: written again over the delete marker (the last revision), as kv.create does. */
  private async createOverDeleted(key: string, data: string): Promise<number | false> {
    const entry = await this.kv.get(key);
    return entry && entry.operation !== 'PUT' ? this.write(key, data, entry.revision) : false;
  }

  /** The stream's answer to a write: its revision, false for a lost compare-and-set; throws otherwise. */
  private answered(answer: WriteAnswer): number | false {
    if ('seq' in answer) return answer.seq;
    if ('timeout' in answer) throw new Error(`no answer from the bus within ${this.timeoutMs} ms`);
    if (answer.code === WRONG_LAST_SEQUENCE) return false;
    throw new Error(answer.description || `the bus refused the write (${answer.code})`);
  }

  async delete(key: string): Promise<void> {
    await this.kv.purge(STATE_PREFIX + key);
  }

  async *keys(): AsyncGenerator<string> {
    for await (const k of await this.kv.keys(`${STATE_PREFIX}>`)) yield k.slice(STATE_PREFIX.length);
  }

  async loadCounts(): Promise<AlertCounts | undefined> {
    const entry = await this.kv.get(COUNTS_KEY);
    return entry?.operation === 'PUT' ? entry.json<AlertCounts>() : undefined;
  }

  async saveCounts(counts: AlertCounts): Promise<void> {
    await this.kv.put(COUNTS_KEY, JSON.stringify(counts));
  }

  async holdResendLease(holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const entry = await this.kv.get(LEASE_KEY);
    const lease = entry?.operation === 'PUT' ? entry.json<{ holder: string; untilMs: number }>() : undefined;
    if (lease && lease.holder !== holder && lease.untilMs > now) return false;
    const data = JSON.stringify({ holder, untilMs: now + ttlMs });
    try {
      if (!entry || entry.operation !== 'PUT') await this.kv.create(LEASE_KEY, data);
      else await this.kv.update(LEASE_KEY, data, entry.revision);
      return true;
    } catch (err) {
      if (isWrongRevision(err)) return false;
      throw err;
    }
  }
}

/** The server's "wrong last sequence": someone else wrote the entry first. */
function isWrongRevision(err: unknown): boolean {
  const e = err as { message?: string; api_error?: { err_code?: number }; code?: string };
  return e.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(e.message ?? '');
}
