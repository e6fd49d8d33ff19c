/**
 * What one integration or API key received on this replica: the last accepted and refused times,
 * counts over the last hour (minute buckets), and the last refusals. Fixed size whatever the
 * traffic: at most MAX_REASONS reason rings, RECENT_REFUSALS refusal slots reused in a ring, and
 * every stored text cut to MAX_REFUSAL_TEXT characters.
 */
import {
  MAX_REASONS,
  MAX_REFUSAL_TEXT,
  OTHER_REASON,
  RECENT_REFUSALS,
  type Activity,
  type RecentRefusal,
} from '../../api/activity.js';
import { MinuteRing, minuteOf } from './minute-ring.js';

/** What the request path hands over for one refusal (texts already cut). */
export interface Refusal {
  status: number;
  code: string;
  reason: string;
  message: string;
  remoteAddress: string;
  userAgent: string;
  deadLetterId: string | undefined;
}

interface RefusalSlot extends Refusal {
  atMs: number;
}

export const cut = (text: string): string => (text.length > MAX_REFUSAL_TEXT ? text.slice(0, MAX_REFUSAL_TEXT) : text);

export class TargetActivity {
  lastEventMs = 0;
  lastRefusalMs = 0;
  private readonly events = new MinuteRing();
  private readonly refusals = new Map<string, MinuteRing>();
  private readonly recent: RefusalSlot[] = [];
  private next = 0;

  get active(): boolean {
    return this.lastEventMs > 0 || this.lastRefusalMs > 0;
  }

  accepted(nowMs: number, count: number): void {
    this.lastEventMs = nowMs;
    this.events.add(minuteOf(nowMs), count);
  }

  refused(nowMs: number, refusal: Refusal): void {
    this.lastRefusalMs = nowMs;
    this.ringOf(refusal.reason).add(minuteOf(nowMs), 1);
    // The slots are reused: a flood of refusals allocates nothing once ten are held.
    const slot = this.recent[this.next];
    if (slot) {
      Object.assign(slot, refusal);
      slot.atMs = nowMs;
    } else this.recent.push({ ...refusal, atMs: nowMs });
    this.next = (this.next + 1) % RECENT_REFUSALS;
  }

  private ringOf(reason: string): MinuteRing {
    let ring = this.refusals.get(reason);
    if (ring) return ring;
    const key = this.refusals.size < MAX_REASONS - 1 ? reason : OTHER_REASON;
    ring = this.refusals.get(key);
    if (!ring) {
      ring = new MinuteRing();
      this.refusals.set(key, ring);
    }
    return ring;
  }

  /** The ring read backwards from the last slot written: newest first, in the order they were answered. */
  private newestFirst(): RefusalSlot[] {
    const out: RefusalSlot[] = [];
    for (let i = 1; i <= this.recent.length; i++)
      out.push(this.recent[(this.next - i + RECENT_REFUSALS) % RECENT_REFUSALS] as RefusalSlot);
    return out;
  }

  snapshot(nowMs: number): Omit<Activity, 'updatedTime'> {
    const minute = minuteOf(nowMs);
    const refusalsLastHour: Record<string, number> = {};
    let refusedLastHour = 0;
    for (const [reason, ring] of this.refusals) {
      const n = ring.sum(minute);
      if (n === 0) continue;
      refusalsLastHour[reason] = n;
      refusedLastHour += n;
    }
    const out: Omit<Activity, 'updatedTime'> = {
      eventsLastHour: this.events.sum(minute),
      refusedLastHour,
      refusalsLastHour,
      recentRefusals: this.newestFirst().map(toRecent),
    };
    if (this.lastEventMs > 0) out.lastEventTime = new Date(this.lastEventMs).toISOString();
    if (this.lastRefusalMs > 0) out.lastRefusalTime = new Date(this.lastRefusalMs).toISOString();
    return out;
  }
}

function toRecent(slot: RefusalSlot): RecentRefusal {
  const r: RecentRefusal = {
    time: new Date(slot.atMs).toISOString(),
    status: slot.status,
    code: slot.code,
    reason: slot.reason,
    message: slot.message,
    remoteAddress: slot.remoteAddress,
    userAgent: slot.userAgent,
  };
  if (slot.deadLetterId !== undefined) r.deadLetterId = slot.deadLetterId;
  return r;
}
