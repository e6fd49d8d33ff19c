/**
 * Whether a destination is paused, and why. While paused its events are held in the queue (the
 * bus, the outbox): nothing is sent, nothing is dead-lettered, no attempt is spent; on resume they
 * are delivered at the destination's rate limit. Three reasons, any one pauses:
 *   - `suspend: true` in the destination's settings (desired state: only the settings end it);
 *   - a pause through the admin API (`POST /destinations/<name>/pause`), until a resume there;
 *   - auto-pause: the receiver failed continuously for `autoPause.after` (no success in between);
 *     it ends only with an explicit resume, since nothing would tell that the receiver is fixed.
 * The last two are runtime state, kept in a PauseStore so that they survive a restart and, with
 * the bus, hold on every replica. The clock is injected, so the state machine is tested without
 * waiting.
 */
import type { Gauge } from 'prom-client';

/** A runtime pause, as kept in the store (settings' `suspend` is not: it lives in the settings). */
export interface RuntimePause {
  by: 'admin' | 'auto';
  /** Epoch milliseconds. */
  since: number;
  /** For an auto-pause: the failure that ended the window, and since when it had been failing. */
  lastFailure?: { at: number; reason: string; error: string };
  failingSince?: number;
}

/** The gauge's reason label: `suspended` (settings or admin API), `auto` (auto-pause). */
export type PauseReason = 'suspended' | 'auto';

/** What the admin API and activity show of a destination's pause. */
export interface PauseStatus {
  paused: boolean;
  /** Why, when paused: `suspended` (settings or admin API) or `auto` (AutoPaused). */
  reason?: PauseReason;
  /** Who paused it: `settings` (suspend: true), `admin` (the admin API), `auto`. */
  by?: 'settings' | 'admin' | 'auto';
  /** ISO time the pause began. */
  since?: string;
  /** The receiver's last failure (an auto-pause's cause). */
  lastFailure?: { at: string; reason: string; error: string };
  /** While failing and not yet paused: since when, and when auto-pause would begin. */
  failingSince?: string;
  autoPauseAt?: string;
}

export interface PauseOptions {
  /** `suspend` in the settings. */
  suspend: boolean;
  /** Continuous failure before auto-pause (0: never). */
  autoPauseAfterMs: number;
  gauge: Gauge<'destination' | 'reason'>;
  /** Told of every runtime change, to keep it (the store); not told of changes it was given by apply(). */
  persist?: (pause: RuntimePause | undefined) => void;
  /** Told of every change of whether it is paused or by whom (logs). */
  onChange?: (status: PauseStatus) => void;
  now?: () => number;
}

/** An error's excerpt kept with the state: enough to tell what the receiver said. */
const MAX_ERROR_CHARS = 256;

export class DestinationPause {
  private suspend: boolean;
  private runtime?: RuntimePause;
  private failingSince?: number;
  private lastFailure?: { at: number; reason: string; error: string };
  private resumed: Array<() => void> = [];
  private readonly listeners = new Set<(paused: boolean) => void>();
  private readonly now: () => number;

  constructor(
    readonly destination: string,
    private readonly o: PauseOptions,
  ) {
    this.suspend = o.suspend;
    this.now = o.now ?? Date.now;
    this.showGauge();
  }

  get paused(): boolean {
    return this.suspend || this.runtime !== undefined;
  }

  /** The settings' `suspend` changed (a reload of the settings). */
  setSuspended(suspend: boolean): void {
    this.change(() => (this.suspend = suspend));
  }

  /** A pause through the admin API; an auto-pause already in place stays what it is. */
  pause(): void {
    if (this.runtime) return;
    this.setRuntime({ by: 'admin', since: this.now() });
  }

  /**
   * Ends an admin pause or an auto-pause. `suspend: true` in the settings is not ended here: the
   * settings say what is wanted, and only they change it (answered `suspended_by_settings`).
   */
  resume(): 'resumed' | 'not_paused' | 'suspended_by_settings' {
    if (this.suspend) return 'suspended_by_settings';
    if (!this.runtime) return 'not_paused';
    this.setRuntime(undefined);
    return 'resumed';
  }

  /** The runtime state another replica (or an earlier run) kept: taken as it is, not kept again. */
  apply(pause: RuntimePause | undefined): void {
    this.change(() => {
      this.runtime = pause;
      if (!pause) this.failingSince = undefined;
    });
  }

  /** The receiver took a request (a refusal is an answer from a working receiver too). */
  succeeded(): void {
    this.failingSince = undefined;
  }

  /** A request failed in a way that says the receiver is in trouble. */
  failed(reason: string, error: string): void {
    const at = this.now();
    this.lastFailure = { at, reason, error: error.slice(0, MAX_ERROR_CHARS) };
    this.failingSince ??= at;
    const after = this.o.autoPauseAfterMs;
    if (after > 0 && !this.paused && at - this.failingSince >= after)
      this.setRuntime({ by: 'auto', since: at, lastFailure: this.lastFailure, failingSince: this.failingSince });
  }

  /** Told each time it pauses (true) or resumes (false); returns the way to stop telling. */
  listen(listener: (paused: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves once the destination is not paused (at once when it is not). */
  untilResumed(): Promise<void> {
    if (!this.paused) return Promise.resolve();
    return new Promise((resolve) => this.resumed.push(resolve));
  }

  status(): PauseStatus {
    const iso = (ms: number): string => new Date(ms).toISOString();
    const failure = this.runtime?.lastFailure ?? this.lastFailure;
    const lastFailure = failure ? { lastFailure: { ...failure, at: iso(failure.at) } } : {};
    if (!this.paused) {
      const failing =
        this.failingSince === undefined
          ? {}
          : {
              failingSince: iso(this.failingSince),
              ...(this.o.autoPauseAfterMs > 0 ? { autoPauseAt: iso(this.failingSince + this.o.autoPauseAfterMs) } : {}),
            };
      return { paused: false, ...failing, ...lastFailure };
    }
    const r = this.runtime;
    // The settings' suspend is named first: it is what must change before anything else resumes it.
    if (this.suspend && (!r || r.by === 'admin')) return { paused: true, reason: 'suspended', by: 'settings' };
    const by = (r as RuntimePause).by;
    return {
      paused: true,
      reason: by === 'auto' ? 'auto' : 'suspended',
      by,
      since: iso((r as RuntimePause).since),
      ...lastFailure,
    };
  }

  private setRuntime(pause: RuntimePause | undefined): void {
    this.change(() => {
      this.runtime = pause;
      // A resume starts a new window: the failures before it do not auto-pause it again at once.
      if (!pause) this.failingSince = undefined;
    });
    this.o.persist?.(pause);
  }

  private change(apply: () => void): void {
    const key = (s: PauseStatus): string => `${s.paused}/${s.by}`;
    const wasPaused = this.paused;
    const before = key(this.status());
    apply();
    this.showGauge();
    const after = this.status();
    if (key(after) !== before) this.o.onChange?.(after);
    if (this.paused !== wasPaused) for (const l of this.listeners) l(this.paused);
    if (!this.paused) for (const resolve of this.resumed.splice(0)) resolve();
  }

  private showGauge(): void {
    const suspended = this.suspend || this.runtime?.by === 'admin';
    this.o.gauge.set({ destination: this.destination, reason: 'suspended' }, suspended ? 1 : 0);
    this.o.gauge.set({ destination: this.destination, reason: 'auto' }, this.runtime?.by === 'auto' ? 1 : 0);
  }
}
