/**
 * Whether a destination is paused, and why. While paused its events are held in the queue (the
 * bus, the outbox): nothing is sent, nothing is dead-lettered, no attempt is spent; on resume they
 * are delivered at the destination's rate limit. Three reasons, any one pauses:
 *   - `suspend: true` in the destination's settings (desired state: only the settings end it);
 *   - a pause through the admin API (`POST /destinations/<name>/pause`), until a resume there;
 *   - auto-pause: the receiver failed continuously for `autoPause.after` (no success in between);
 *     it ends only with an explicit resume, since nothing would tell that the receiver is fixed:
 *     the admin API's, or the settings' `suspend` turned on and off again (a team's only way, as
 *     the admin API is the platform's).
 * The last two are runtime state, kept in a PauseStore so that they survive a restart and, with
 * the bus, hold on every replica. The clock is injected, so the state machine is tested without
 * waiting.
 */
import type { Gauge } from 'prom-client';
import { inertText } from '../../../common/sender-text.js';

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

/**
 * A destination's pause in the words of a Kubernetes condition (`Paused`): what the ingesters
 * report for a team's `Destination` and what the admin API shows beside the pause. Reasons:
 * `Suspended` (`suspend: true` in the settings, a team's `spec.suspend`), `AutoPaused`,
 * `PausedByAdmin` (the admin API), and `Active` when it is not paused.
 */
export interface PausedCondition {
  status: 'True' | 'False';
  reason: 'Suspended' | 'AutoPaused' | 'PausedByAdmin' | 'Active';
  message: string;
}

export function pausedCondition(s: PauseStatus): PausedCondition {
  if (!s.paused) return { status: 'False', reason: 'Active', message: 'delivering' };
  if (s.by === 'settings')
    return { status: 'True', reason: 'Suspended', message: 'suspend is true: events are held, not delivered' };
  if (s.by === 'admin')
    return {
      status: 'True',
      reason: 'PausedByAdmin',
      message: `paused through the admin API since ${s.since ?? '?'}: events are held until a resume`,
    };
  // The receiver's answer is text someone else wrote: made inert before it reaches a condition.
  const failure = s.lastFailure ? ` (last failure: ${s.lastFailure.reason}: ${inertText(s.lastFailure.error)})` : '';
  return {
    status: 'True',
    reason: 'AutoPaused',
    message:
      `auto-paused since ${s.since ?? '?'} after failing continuously for autoPause.after${failure}: ` +
      'events are held until a resume (suspend set to true then false, or intake destination resume)',
  };
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
  private autoPauseAfterMs: number;

  constructor(
    readonly destination: string,
    private readonly o: PauseOptions,
  ) {
    this.suspend = o.suspend;
    this.autoPauseAfterMs = o.autoPauseAfterMs;
    this.now = o.now ?? Date.now;
    this.showGauge();
  }

  get paused(): boolean {
    return this.suspend || this.runtime !== undefined;
  }

  /**
   * The settings' `suspend` changed (a team's Destination changed, a reload of the settings). Turned
   * off again, it ends an auto-pause too: a team cannot reach the admin API, and turning suspend
   * on and off is the explicit resume it has. An admin pause stays: it is the platform's.
   */
  setSuspended(suspend: boolean): void {
    const endsAutoPause = this.suspend && !suspend && this.runtime?.by === 'auto';
    this.change(() => {
      this.suspend = suspend;
      if (!endsAutoPause) return;
      this.runtime = undefined;
      this.failingSince = undefined;
    });
    if (endsAutoPause) this.o.persist?.(undefined);
  }

  /**
   * The settings' `autoPause.after` changed (0: disabled). It applies to the failures from now on,
   * counted from the first of the current run of failures; it does not end an auto-pause in place.
   */
  setAutoPauseAfter(ms: number): void {
    this.autoPauseAfterMs = ms;
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
    const after = this.autoPauseAfterMs;
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

  /** The `Paused` condition of this destination (pausedCondition). */
  condition(): PausedCondition {
    return pausedCondition(this.status());
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
              ...(this.autoPauseAfterMs > 0 ? { autoPauseAt: iso(this.failingSince + this.autoPauseAfterMs) } : {}),
            };
      return { paused: false, ...failing, ...lastFailure };
    }
    const r = this.runtime;
    // The settings' suspend is named first: it is what must change before anything else resumes it
    // (and turning it off ends an auto-pause too).
    if (this.suspend) return { paused: true, reason: 'suspended', by: 'settings' };
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
