/**
 * Every destination's pause (pause.ts) with the store that keeps the runtime ones
 * (pause-store.ts): what the admin API reads and changes, and the wiring hands to each dispatcher
 * and queue.
 */
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import type { DestinationSettings } from '../settings.js';
import { DestinationPause, type PauseStatus, type RuntimePause } from './pause.js';
import type { PauseStore } from './pause-store.js';

export type ResumeResult = ReturnType<DestinationPause['resume']>;

export class DestinationPauses {
  private readonly pauses = new Map<string, DestinationPause>();
  /** Each destination's last save, awaited by the admin API so a 200 means it is kept. */
  private readonly saves = new Map<string, Promise<void>>();
  private store?: PauseStore;
  /**
   * Every runtime pause the store holds, also of a destination not delivered to yet: a team's
   * destination added later (its resource arrives after the start, or after the bus connected)
   * starts with the pause kept for it, not at its next change.
   */
  private readonly kept = new Map<string, RuntimePause>();

  constructor(
    private readonly gauge: Gauge<'destination' | 'reason'>,
    private readonly logger: Logger,
  ) {}

  /**
   * A destination's pause, made when it is first delivered to (the platform's at the start, a
   * team's when its resource arrives). One that exists already (a team destination replaced by a
   * new version) is kept, with its runtime pause; only its settings' suspend is taken anew.
   */
  add(d: DestinationSettings): DestinationPause {
    const existing = this.pauses.get(d.name);
    if (existing) {
      existing.setSuspended(d.suspend === true);
      return existing;
    }
    const logger = this.logger;
    const pause = new DestinationPause(d.name, {
      suspend: d.suspend === true,
      autoPauseAfterMs: d.protection.autoPause?.afterMs ?? 0,
      gauge: this.gauge,
      persist: (p) => this.keep(d.name, p, logger),
      onChange: (status) => {
        const log = { destination: d.name, ...status };
        if (status.reason === 'auto')
          logger.error(log, 'destination auto-paused after failing continuously; its events are held until a resume');
        else if (status.paused) logger.warn(log, 'destination paused: its events are held until it is resumed');
        else logger.info(log, 'destination resumed: its held events are delivered');
      },
    });
    this.pauses.set(d.name, pause);
    const kept = this.kept.get(d.name);
    if (kept) pause.apply(kept);
    return pause;
  }

  /** A destination no longer delivered to (a team's resource deleted): its pause and gauge series go. */
  remove(destination: string): void {
    if (!this.pauses.delete(destination)) return;
    for (const reason of ['suspended', 'auto']) this.gauge.remove({ destination, reason });
  }

  /** Where runtime pauses are kept from now on; `kept`: those an earlier run (or another replica) kept. */
  keepIn(store: PauseStore, kept: ReadonlyMap<string, RuntimePause> = new Map()): void {
    this.store = store;
    for (const [name, pause] of kept) this.apply(name, pause);
  }

  /** A kept pause read from the store (another replica's change), for a destination delivered to now or later. */
  apply(destination: string, pause: RuntimePause | undefined): void {
    if (pause) this.kept.set(destination, pause);
    else this.kept.delete(destination);
    this.pauses.get(destination)?.apply(pause);
  }

  of(destination: string): DestinationPause | undefined {
    return this.pauses.get(destination);
  }

  status(destination: string): PauseStatus | undefined {
    return this.pauses.get(destination)?.status();
  }

  async pause(destination: string): Promise<PauseStatus | undefined> {
    const p = this.pauses.get(destination);
    if (!p) return undefined;
    p.pause();
    await this.saves.get(destination);
    return p.status();
  }

  async resume(destination: string): Promise<{ result: ResumeResult; status: PauseStatus } | undefined> {
    const p = this.pauses.get(destination);
    if (!p) return undefined;
    const result = p.resume();
    await this.saves.get(destination);
    return { result, status: p.status() };
  }

  private keep(destination: string, pause: RuntimePause | undefined, logger: Logger): void {
    if (pause) this.kept.set(destination, pause);
    else this.kept.delete(destination);
    const store = this.store;
    if (!store) return;
    // One after another, so the last change is the one kept.
    const previous = this.saves.get(destination) ?? Promise.resolve();
    const saved = previous
      .then(() => store.save(destination, pause))
      .catch((err: Error) =>
        logger.error(
          { destination, err: { message: err.message } },
          'destination pause not kept: it holds until this process stops',
        ),
      );
    this.saves.set(destination, saved);
  }
}
