/**
 * Events and refusals per minute over the last hour (status.activity.minutes) as a small bar
 * chart: events up from the middle line, refusals down from it, the newest minute on the right.
 * The list draws one per row (thousands of rows: one path per series, nothing per minute), the
 * detail page a larger one whose bars name their minute.
 */
import type { ActivityMinutes } from '../../../api/activity.js';
import { ACTIVITY_MINUTES } from '../../../api/activity.js';
import { minuteOfStart, minuteStart } from '../../../api/activity-minutes.js';

const MINUTE_MS = 60_000;

interface Bar {
  /** 0 is the oldest minute of the hour, 59 the current one. */
  slot: number;
  minute: number;
  events: number;
  refused: number;
}

/** The hour ending with the minute `nowMs` is in: the minutes that had anything, placed in it. */
export function barsOf(minutes: ActivityMinutes | undefined, nowMs: number): Bar[] {
  const first = minutes && minuteOfStart(minutes.start);
  if (!minutes || first === undefined) return [];
  const oldest = Math.floor(nowMs / MINUTE_MS) - ACTIVITY_MINUTES + 1;
  const bars: Bar[] = [];
  for (let i = 0; i < Math.max(minutes.events.length, minutes.refused.length); i++) {
    const slot = first + i - oldest;
    const events = minutes.events[i] ?? 0;
    const refused = minutes.refused[i] ?? 0;
    if (slot < 0 || slot >= ACTIVITY_MINUTES || (events <= 0 && refused <= 0)) continue;
    bars.push({ slot, minute: first + i, events, refused });
  }
  return bars;
}

const clock = (minute: number): string => minuteStart(minute).slice(11, 16);

/** What the two series are called: events and refused, or (a destination's) delivered and failed. */
export interface ChartWords {
  up: string;
  down: string;
}
const ACTIVITY_WORDS: ChartWords = { up: 'events', down: 'refused' };

/** What a screen reader says instead of the picture. */
function describe(bars: Bar[], w: ChartWords): string {
  if (bars.length === 0) return `No ${w.up} or ${w.down} in the last hour`;
  const events = bars.reduce((n, b) => n + b.events, 0);
  const refused = bars.reduce((n, b) => n + b.refused, 0);
  const peak = bars.reduce((p, b) => (b.events > p.events ? b : p));
  return `Last hour: ${events} ${w.up}${peak.events > 0 ? ` (most at ${clock(peak.minute)} UTC: ${peak.events})` : ''}, ${refused} ${w.down}`;
}

export function MinuteChart({
  minutes,
  now,
  width = 120,
  height = 28,
  detailed = false,
  words = ACTIVITY_WORDS,
}: {
  minutes: ActivityMinutes | undefined;
  now: number;
  width?: number;
  height?: number;
  /** One element per minute with its counts (the detail page); otherwise one path per series. */
  detailed?: boolean;
  words?: ChartWords;
}) {
  const bars = barsOf(minutes, now);
  const half = height / 2;
  const step = width / ACTIVITY_MINUTES;
  const barWidth = Math.max(1, step - (step > 3 ? 1 : 0));
  const peak = Math.max(1, ...bars.map((b) => Math.max(b.events, b.refused)));
  const up = (n: number): number => (n > 0 ? Math.max(1, (n / peak) * (half - 1)) : 0);
  const path = (value: (b: Bar) => number, sign: 1 | -1): string =>
    bars
      .filter((b) => value(b) > 0)
      .map(
        (b) =>
          `M${(b.slot * step).toFixed(1)} ${half}v${(-sign * up(value(b))).toFixed(1)}h${barWidth.toFixed(1)}v${(sign * up(value(b))).toFixed(1)}z`,
      )
      .join('');
  return (
    <svg
      class="minute-chart"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={describe(bars, words)}
    >
      <line class="axis" x1="0" x2={width} y1={half} y2={half} />
      {detailed ? (
        bars.map((b) => (
          <g
            key={b.minute}
            class="minute"
            data-minute={minuteStart(b.minute)}
            data-events={b.events}
            data-refused={b.refused}
          >
            <title>{`${clock(b.minute)} UTC: ${b.events} ${words.up}, ${b.refused} ${words.down}`}</title>
            {b.events > 0 && (
              <rect
                class="bar-events"
                x={b.slot * step}
                y={half - up(b.events)}
                width={barWidth}
                height={up(b.events)}
              />
            )}
            {b.refused > 0 && (
              <rect class="bar-refused" x={b.slot * step} y={half} width={barWidth} height={up(b.refused)} />
            )}
          </g>
        ))
      ) : (
        <>
          <path class="bar-events" d={path((b) => b.events, 1)} />
          <path class="bar-refused" d={path((b) => b.refused, -1)} />
        </>
      )}
    </svg>
  );
}
