/**
 * What one integration or API key received on this replica: the last accepted and refused times,
 * counts over the last hour (minute buckets), the last refusals of authenticated requests, and the
 * senders refused before authentication. Fixed size whatever the traffic: at most MAX_REASONS
 * reason rings, RECENT_REFUSALS refusal slots reused in a ring, UNAUTHENTICATED_SENDERS sender
 * slots, and every stored text inert and cut to MAX_REFUSAL_TEXT characters (recorder.ts).
 *
 * The two kinds of slots are apart so that a stranger, who can make as many unauthenticated
 * refusals as it likes, never pushes a tenant's real refusals out, and never writes text into
 * them: of an unauthenticated refusal only the address, the reason and a count are kept.
 */
import {
  MAX_REASONS,
  OTHER_REASON,
  RECENT_REFUSALS,
  UNAUTHENTICATED_SENDERS,
  type Activity,
  type ActivityMinutes,
  type RecentRefusal,
  type UnauthenticatedSender,
} from '../../api/activity.js';
import { toActivityMinutes } from '../../api/activity-minutes.js';
import { MINUTES, MinuteRing, minuteOf } from './minute-ring.js';

/**
 * What the request path hands over for one refusal of an authenticated request (texts already
 * inert and cut): the recent refusal of api/activity.ts but its time, and deadLetterId always
 * present, so that reusing a slot (Object.assign) clears the last one's.
 */
export type Refusal = Omit<RecentRefusal, 'time' | 'deadLetterId'> & { deadLetterId: string | undefined };

interface RefusalSlot extends Refusal {
  atMs: number;
}

/** One address refused for one reason before authentication (the address already inert and cut). */
interface SenderSlot {
  remoteAddress: string;
  reason: string;
  status: number;
  code: string;
  count: number;
  firstMs: number;
  lastMs: number;
}

export class TargetActivity {
  lastEventMs = 0;
  lastRefusalMs = 0;
  private readonly events = new MinuteRing();
  /** By reason; created at the first refusal (most routes have none). */
  private refusals?: Map<string, MinuteRing>;
  /** Events a routing rule dropped; created at the first drop. */
  private dropped?: MinuteRing;
  private readonly recent: RefusalSlot[] = [];
  private next = 0;
  private readonly senders: SenderSlot[] = [];

  get active(): boolean {
    return this.lastEventMs > 0 || this.lastRefusalMs > 0;
  }

  accepted(nowMs: number, count: number): void {
    this.lastEventMs = nowMs;
    this.events.add(minuteOf(nowMs), count);
  }

  droppedByRule(nowMs: number, count: number): void {
    (this.dropped ??= new MinuteRing()).add(minuteOf(nowMs), count);
  }

  /** A refusal of a request that had proved its credentials. */
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

  /**
   * A refusal before authentication: counted by reason like any other, and kept in its address
   * and reason's slot. A new address and reason takes a free slot, or the one seen longest ago.
   */
  refusedUnauthenticated(nowMs: number, status: number, code: string, reason: string, remoteAddress: string): void {
    this.lastRefusalMs = nowMs;
    this.ringOf(reason).add(minuteOf(nowMs), 1);
    let slot: SenderSlot | undefined;
    let oldest: SenderSlot | undefined;
    for (const s of this.senders) {
      if (s.remoteAddress === remoteAddress && s.reason === reason) {
        slot = s;
        break;
      }
      if (!oldest || s.lastMs < oldest.lastMs) oldest = s;
    }
    if (slot) {
      slot.count++;
    } else if (this.senders.length < UNAUTHENTICATED_SENDERS) {
      slot = { remoteAddress, reason, status, code, count: 1, firstMs: nowMs, lastMs: nowMs };
      this.senders.push(slot);
    } else {
      slot = oldest as SenderSlot;
      slot.remoteAddress = remoteAddress;
      slot.reason = reason;
      slot.count = 1;
      slot.firstMs = nowMs;
    }
    slot.status = status;
    slot.code = code;
    slot.lastMs = nowMs;
  }

  private ringOf(reason: string): MinuteRing {
    const refusals = (this.refusals ??= new Map());
    let ring = refusals.get(reason);
    if (ring) return ring;
    const key = refusals.size < MAX_REASONS - 1 ? reason : OTHER_REASON;
    ring = refusals.get(key);
    if (!ring) {
      ring = new MinuteRing();
      refusals.set(key, ring);
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

  /** Events and refusals (every reason) in each minute of the hour up to `minute`. */
  private minutes(minute: number): ActivityMinutes | undefined {
    const events = new Array<number>(MINUTES).fill(0);
    const refused = new Array<number>(MINUTES).fill(0);
    this.events.addInto(events, minute);
    for (const ring of this.refusals?.values() ?? []) ring.addInto(refused, minute);
    return toActivityMinutes(minute - MINUTES + 1, events, refused);
  }

  snapshot(nowMs: number): Omit<Activity, 'updatedTime'> {
    const minute = minuteOf(nowMs);
    const refusalsLastHour: Record<string, number> = {};
    let refusedLastHour = 0;
    for (const [reason, ring] of this.refusals ?? []) {
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
    const minutes = this.minutes(minute);
    if (minutes) out.minutes = minutes;
    const dropped = this.dropped?.sum(minute) ?? 0;
    if (dropped > 0) out.droppedByRuleLastHour = dropped;
    if (this.senders.length > 0)
      out.unauthenticatedSenders = [...this.senders].sort((a, b) => b.lastMs - a.lastMs).map(toSender);
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

function toSender(slot: SenderSlot): UnauthenticatedSender {
  return {
    remoteAddress: slot.remoteAddress,
    reason: slot.reason,
    status: slot.status,
    code: slot.code,
    count: slot.count,
    firstTime: new Date(slot.firstMs).toISOString(),
    lastTime: new Date(slot.lastMs).toISOString(),
  };
}
