/**
 * Whether the bus refuses events for lack of storage: the stream at its max_bytes or max_msgs
 * (discard new), the account or the server out of JetStream storage. Unlike a one-off refusal this
 * is a state: every event is refused until space is freed (max_age removes old events, an operator
 * raises a limit). While it lasts, this replica answers 503 for whatever its spool cannot take, so
 * readiness must say so. It ends with the next PubAck, or when a probe shows room again: stream
 * info and account info, at most once per PROBE_INTERVAL_MS while readiness asks (an unready
 * replica gets no requests, so no PubAck would ever end it).
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { JetStreamSettings } from './handoff-config.js';

const PROBE_INTERVAL_MS = 1000;
/** Room a probe must see before the bus counts as taking events again: about one large request. */
const ROOM_BYTES = 1024 * 1024;
const ROOM_MSGS = 1000;

/** The server's words for "no storage left" (stream limits with discard new, account or server storage). */
export function isStorageRefusal(description: string): boolean {
  return /insufficient (storage )?resources|maximum (bytes|messages) exceeded|resource limits exceeded|storage resources exceeded|no space left/i.test(description);
}

export class BusStorage {
  private refusal?: string;
  private lastProbe = 0;
  private probing?: Promise<void>;
  private closed = false;

  constructor(
    private readonly s: JetStreamSettings,
    /** The connection while the bus is up. */
    private readonly connection: () => NatsConnection | undefined,
    private readonly logger: Logger,
  ) {}

  /** The outcome of one publish round: a storage refusal starts the state, a PubAck ends it. */
  observe(acked: number, refused: number, lastRefusal: string | undefined): void {
    if (refused > 0 && lastRefusal !== undefined && isStorageRefusal(lastRefusal)) {
      if (this.refusal === undefined) this.logger.warn({ reason: lastRefusal }, 'the stream refuses events for lack of storage; unready unless the spool takes them');
      this.refusal = lastRefusal;
    } else if (acked > 0 && this.refusal !== undefined) {
      this.end('a publish was acknowledged');
    }
  }

  /** Why the bus refuses events now, or undefined; starts a probe in the background when due. */
  refusing(): string | undefined {
    if (this.refusal === undefined) return undefined;
    if (!this.probing && Date.now() - this.lastProbe >= PROBE_INTERVAL_MS) {
      this.lastProbe = Date.now();
      this.probing = this.probe().finally(() => (this.probing = undefined));
    }
    return `the stream refuses events for lack of storage (${this.refusal})`;
  }

  close(): void {
    this.closed = true;
  }

  private end(why: string): void {
    this.logger.info({ reason: why }, 'the stream takes events again');
    this.refusal = undefined;
  }

  /** Room in the stream's limits and the account's storage; the server's own limit shows in the account's when set. */
  private async probe(): Promise<void> {
    const nc = this.connection();
    if (!nc || this.closed) return;
    try {
      const jsm = await jetstreamManager(nc, { timeout: this.s.timeoutMs });
      const { config, state } = await jsm.streams.info(this.s.stream);
      const account = await jsm.getAccountInfo();
      const hasRoom = (used: number, max: number | undefined, room: number): boolean => max === undefined || max <= 0 || used + Math.min(room, max / 100) <= max;
      if (hasRoom(state.bytes, config.max_bytes, ROOM_BYTES) && hasRoom(state.messages, config.max_msgs, ROOM_MSGS) && hasRoom(account.storage, account.limits.max_storage, ROOM_BYTES)) {
        if (this.refusal !== undefined && !this.closed) this.end('the stream and the account have room again');
      }
    } catch {
      // The bus cannot tell now: the state stays until a PubAck or a later probe.
    }
  }
}
