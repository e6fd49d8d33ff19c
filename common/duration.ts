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
  return total;
}
