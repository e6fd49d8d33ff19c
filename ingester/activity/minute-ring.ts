/**
 * Counts over the last hour in one-minute buckets: sixty counters, each stamped with the minute it
 * holds. Adding is two array writes (no allocation, no timer); a bucket from an older minute is
 * reset when its slot comes round again, and left out of the sum meanwhile. The arrays exist only
 * from the first count: most of 20,000 routes receive nothing on a given replica, and two empty
 * rings cost about 1 KiB each (docs/benchmarks.md, route table).
 */
export const MINUTES = 60;

/** The minute a wall-clock time falls in (the ring's index unit). */
export const minuteOf = (epochMs: number): number => Math.floor(epochMs / 60_000);

export class MinuteRing {
  private counts?: Float64Array;
  private stamps?: Float64Array;

  add(minute: number, n: number): void {
    this.counts ??= new Float64Array(MINUTES);
    this.stamps ??= new Float64Array(MINUTES).fill(-1);
    const i = minute % MINUTES;
    if (this.stamps[i] !== minute) {
      this.stamps[i] = minute;
      this.counts[i] = 0;
    }
    (this.counts[i] as number) += n;
  }

  /** Adds each minute's count from `minute - 59` to `minute` into `into[0..59]`. */
  addInto(into: number[], minute: number): void {
    if (!this.counts || !this.stamps) return;
    const first = minute - MINUTES + 1;
    for (let i = 0; i < MINUTES; i++) {
      const stamp = this.stamps[i] as number;
      if (stamp >= first && stamp <= minute)
        into[stamp - first] = (into[stamp - first] ?? 0) + (this.counts[i] as number);
    }
  }

  /** The total over `minute` and the 59 before it. */
  sum(minute: number): number {
    let total = 0;
    if (!this.counts || !this.stamps) return total;
    for (let i = 0; i < MINUTES; i++) {
      const stamp = this.stamps[i] as number;
      if (stamp > minute - MINUTES && stamp <= minute) total += this.counts[i] as number;
    }
    return total;
  }
}
