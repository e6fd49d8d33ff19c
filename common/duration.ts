const MAX_DURATION_MS = 9_223_372_036_854; // 2^63 - 1 ns, as Go's time.Duration

/** Parses a Go-style duration (0s, 90s, 15m, 1h30m, 250ms) into milliseconds. */
export function parseDuration(value: string | undefined): number {
  if (value === undefined || value === '') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    total += Number(m[1]) * unit[m[2] as keyof typeof unit];
    consumed = re.lastIndex;
  }
  if (consumed !== value.length)
    throw new Error(`invalid duration ${JSON.stringify(value)}: use e.g. 0s, 90s, 15m, 1h30m`);
  // Go refuses what overflows its int64 nanoseconds (about 292 years); so do we, before a later
  // new Date(now + duration) throws a RangeError in the middle of a reconcile.
  if (total > MAX_DURATION_MS)
    throw new Error(`invalid duration ${JSON.stringify(value)}: longer than the maximum of about 292 years`);
  return total;
}

/** Milliseconds as the Go-style duration parseDuration reads back: 90000 → "1m30s", 250 → "250ms", 0 → "0s". */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  if (rest > 0) parts.push(`${Number(rest.toFixed(3))}ms`);
  return parts.join('');
}
