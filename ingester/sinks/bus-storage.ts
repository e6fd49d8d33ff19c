/**
 * Whether the bus refuses events for lack of storage: the stream at its max_bytes or max_msgs
 * (discard new), the account or the server out of JetStream storage. Unlike a one-off refusal this
 * is a state: every event is refused until space is freed (max_age removes old events, an operator
 * raises a limit). While it lasts, this replica answers 503 for whatever its spool cannot take, so
 * readiness must say so. It ends with the next PubAck, a new connection, or when a probe (at most
 * once per PROBE_INTERVAL_MS while readiness asks: an unready replica gets no requests, so no
 * PubAck would end it) shows room again: the account's storage in use dropped since the refusal
 * (old events aged out, a purge; the only sign of a server out of storage, whose limit the
 * account info does not show), or the stream's or the account's own limit now leaves room.
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
  return /insufficient (storage )?resources|maximum (bytes|messages) exceeded|resource limits exceeded|storage resources exceeded|no space left/i.test(
    description,
  );
}

export class BusStorage {
  private refusal?: string;
  /** The account's storage in use when the refusal began (measured by the first probe). */
  private usedAtRefusal?: number;
  private lastProbe = 0;
  private probing?: Promise<void>;
  private closed = false;

  constructor(
    private readonly settings: JetStreamSettings,
    /** The connection while the bus is up. */
    private readonly connection: () => NatsConnection | undefined,
    private readonly logger: Logger,
  ) {}

  /** The outcome of one publish round: a storage refusal starts the state, a PubAck ends it. */
  observe(acked: number, refused: number, lastRefusal: string | undefined): void {
    if (refused > 0 && lastRefusal !== undefined && isStorageRefusal(lastRefusal)) {
      const starting = this.refusal === undefined;
      this.refusal = lastRefusal;
      if (starting) {
        this.logger.warn(
          { reason: lastRefusal },
          'the stream refuses events for lack of storage; unready unless the spool takes them',
        );
        this.usedAtRefusal = undefined;
        this.startProbe();
      }
    } else if (acked > 0 && this.refusal !== undefined) {
      this.end('a publish was acknowledged');
    }
  }

  /** Why the bus refuses events now, or undefined; starts a probe in the background when due. */
  refusing(): string | undefined {
    if (this.refusal === undefined) return undefined;
    if (Date.now() - this.lastProbe >= PROBE_INTERVAL_MS) this.startProbe();
    return `the stream refuses events for lack of storage (${this.refusal})`;
  }

  /** A new connection: whatever the bus said before is found out again by the next publish. */
  reset(): void {
    this.refusal = undefined;
  }

  close(): void {
    this.closed = true;
  }

  private startProbe(): void {
    if (this.probing) return;
    this.lastProbe = Date.now();
    this.probing = this.probe().finally(() => (this.probing = undefined));
  }

  private end(why: string): void {
    this.logger.info({ reason: why }, 'the stream takes events again');
    this.refusal = undefined;
  }

  private async probe(): Promise<void> {
    const nc = this.connection();
    if (!nc || this.closed) return;
    try {
      const jsm = await jetstreamManager(nc, { timeout: this.settings.timeoutMs });
      const { config, state } = await jsm.streams.info(this.settings.stream);
      const account = await jsm.getAccountInfo();
      if (this.refusal === undefined || this.closed) return;
      if (this.usedAtRefusal === undefined) {
        this.usedAtRefusal = account.storage;
        return;
      }
      const room = (max: number, unit: number): number => Math.min(unit, max / 100);
      const hasRoom = (used: number, max: number | undefined, unit: number): boolean =>
        max === undefined || max <= 0 || used + room(max, unit) <= max;
      const freed = account.storage + room(this.usedAtRefusal, ROOM_BYTES) <= this.usedAtRefusal;
      const streamLimited = (config.max_bytes ?? -1) > 0 || (config.max_msgs ?? -1) > 0;
      const streamRoom =
        streamLimited &&
        hasRoom(state.bytes, config.max_bytes, ROOM_BYTES) &&
        hasRoom(state.messages, config.max_msgs, ROOM_MSGS);
      const accountRoom =
        account.limits.max_storage > 0 && hasRoom(account.storage, account.limits.max_storage, ROOM_BYTES);
      if (freed) this.end('storage was freed since the refusal');
      else if (/maximum (bytes|messages)/i.test(this.refusal) && streamRoom)
        this.end("the stream's limits leave room again");
      else if (/account/i.test(this.refusal) && accountRoom) this.end("the account's storage limit leaves room again");
    } catch {
      // The bus cannot tell now: the state stays until a PubAck or a later probe.
    }
  }
}
