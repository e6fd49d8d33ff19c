/**
 * The ingester benchmark's report: the tables it prints (plain text) and writes to BENCH_OUT
 * (markdown) from what the scenarios measured.
 */
import { writeFileSync } from 'node:fs';
import type { Measured, WrkRun } from '../support/load.js';
import {
  alertmanagerVersion,
  deployedNodeFlags,
  machine,
  pushgatewayVersion,
  type Server,
} from '../support/servers.js';
import { median } from '../../test/support/stats.js';
import { BATCHED, type PresetResult } from './presets.js';
import type { SeriesResult } from './setup.js';
import {
  CONNECTIONS,
  DURATION_S,
  LOAD_CPU,
  log,
  MiB,
  NOTIFICATION_ALERTS,
  NOTIFICATION_CONNECTIONS,
  PRESET_DURATION_S,
  PRESET_RUNS,
  RUNS,
  SERIES,
  SERVER_CPU,
  WARMUP_S,
  RENDERS,
} from '../support/settings.js';

export type Row = string[];

export function table(header: Row, rows: Row[], markdown: boolean, rightFrom = 2): string {
  if (markdown) {
    const align = header.map((_, i) => (i >= rightFrom ? '---:' : '---'));
    return [header, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: Row): string =>
    r
      .map((c, i) => (i >= rightFrom ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export const f = (n: number | undefined, digits = 0): string =>
  n !== undefined && Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a';
export const verdict = (ok: boolean | undefined): string => (ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS');

/** What benchmark() measured, scenario by scenario; NaN or undefined where a peer did not run. */
export interface Results {
  singleResults: Measured[];
  single: Measured;
  baseSingle: Measured;
  alerts: Measured | undefined;
  compareFlags: string[] | undefined;
  comparedSingle: Measured | undefined;
  rssAfterSingle: { ingester: number; baseline: number; alertmanager: number; compared: number };
  batch: Measured;
  rssAfterBatch: number;
  gateway: Server | undefined;
  metric: Measured;
  push: Measured | undefined;
  rssAfterMetric: { ingester: number; gateway: number };
  eventsPerNotification: number;
  notification: Measured;
  rssAfterNotification: number;
  unmapped: Measured;
  mapped: Measured;
  rssAfterMapped: number;
  /** The presets scenario; undefined with BENCH_NO_PRESETS=1. */
  presets: PresetResult[] | undefined;
  series: SeriesResult;
}

/** The main table: each scenario's medians and the server's peak RSS after it. */
function scenarioTable(r: Results, md: boolean): string {
  const {
    single,
    baseSingle,
    alerts,
    compareFlags,
    comparedSingle,
    rssAfterSingle,
    batch,
    rssAfterBatch,
    gateway,
    metric,
    push,
    rssAfterMetric,
  } = r;
  const { eventsPerNotification, notification, rssAfterNotification, unmapped, mapped, rssAfterMapped } = r;
  const header = ['scenario', 'server', 'requests/s', 'events or points/s', 'p50 ms', 'p99 ms', 'peak RSS MiB'];
  const row = (scenario: string, server: string, m: Measured | undefined, perRequest: number, rss: number): Row => [
    scenario,
    server,
    f(m?.rps),
    f(m ? m.rps * perRequest : undefined),
    f(m?.p50, 2),
    f(m?.p99, 2),
    f(rss),
  ];
  const rows: Row[] = [
    row('single event (webhook)', 'ingester', single, 1, rssAfterSingle.ingester),
    row('single event (webhook)', 'node:http baseline', baseSingle, 1, rssAfterSingle.baseline),
    ...(comparedSingle
      ? [
          row(
            'single event (webhook)',
            `ingester, node flags: ${compareFlags?.join(' ') || 'none'}`,
            comparedSingle,
            1,
            rssAfterSingle.compared,
          ),
        ]
      : []),
    alerts
      ? row(
          'single alert (POST /api/v2/alerts)',
          `Alertmanager ${alertmanagerVersion()}`,
          alerts,
          1,
          rssAfterSingle.alertmanager,
        )
      : ['single alert', 'Alertmanager (not run)', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'],
    row('100-event batch (webhook)', 'ingester', batch, 100, rssAfterBatch),
    row('single metric point', 'ingester', metric, 1, rssAfterMetric.ingester),
    gateway
      ? row('single metric push', `Pushgateway ${pushgatewayVersion()}`, push, 1, rssAfterMetric.gateway)
      : ['single metric push', 'Pushgateway (not run)', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'],
    row(
      `Alertmanager notification, ${NOTIFICATION_ALERTS} alerts (preset alertmanager, wrk -c${NOTIFICATION_CONNECTIONS})`,
      'ingester',
      notification,
      eventsPerNotification,
      rssAfterNotification,
    ),
    row('single event, unmapped (paired with the next row)', 'ingester', unmapped, 1, rssAfterMapped),
    row('single event, small custom JSONata mapping', 'ingester', mapped, 1, rssAfterMapped),
  ];
  return table(header, rows, md);
}

/** The presets scenario: one row per preset, native against JSONata, then the mapping alone. */
const PRESET_TARGET = 25_000;
function presetTable({ presets, unmapped }: Results, md: boolean): string {
  if (!presets) return 'Presets: not run (BENCH_NO_PRESETS=1).';
  const header = [
    'preset (payload)',
    'events/request',
    'native requests/s',
    'native events/s',
    'JSONata requests/s',
    'JSONata events/s',
    'native / JSONata',
    'native events per server CPU-second',
    'mapping alone, native events/s',
    'mapping alone, JSONata events/s',
    `>= ${f(PRESET_TARGET)} events/s`,
  ];
  const rows: Row[] = presets.map((p) => {
    const nativeEvents = p.native.rps * p.eventsPerRequest;
    return [
      `${p.preset} (${BATCHED.has(p.preset) ? `notification of ${NOTIFICATION_ALERTS} alerts, wrk -c${NOTIFICATION_CONNECTIONS}` : `one event, wrk -c${CONNECTIONS}`})`,
      f(p.eventsPerRequest),
      f(p.native.rps),
      f(nativeEvents),
      f(p.jsonata?.rps),
      f(p.jsonata ? p.jsonata.rps * p.eventsPerRequest : undefined),
      p.jsonata ? `${f(p.native.rps / p.jsonata.rps, 1)}x` : 'n/a',
      f(median(p.native.runs.map((r) => (r.rps / (r.serverCpu / 100)) * p.eventsPerRequest))),
      f(p.aloneNative),
      f(p.aloneJsonata),
      verdict(nativeEvents >= PRESET_TARGET),
    ];
  });
  const about =
    `Presets: each on its tool's payload through the ingester, ${PRESET_RUNS} run(s) of ${PRESET_DURATION_S} s (median), the native function ` +
    `and, alternately, the JSONata expression (a second ingester of this build, native presets taken out). "Mapping alone": the ` +
    `evaluation in the benchmark's own process, no HTTP. Events per server CPU-second: the cost per core, steadier than events/s when other processes take CPU ${SERVER_CPU}. A tool that sends one event per request is bound by the cost of a request: ` +
    `unmapped single events ran at ${f(unmapped.rps)} requests/s (scenario 4).`;
  return [about, '', table(header, rows, md, 1)].join('\n');
}

/** Each run in order, with the CPU the server and its neighbours used. */
function runsTable(r: Results, md: boolean): string {
  const {
    single,
    baseSingle,
    alerts,
    compareFlags,
    comparedSingle,
    batch,
    metric,
    push,
    notification,
    unmapped,
    mapped,
  } = r;
  const runsHeader = [
    'scenario',
    'server',
    'requests/s, each run',
    'p99 ms, each run',
    'server CPU %',
    `CPU ${SERVER_CPU} used by others %`,
    `CPU ${LOAD_CPU} (wrk) busy %`,
    'requests per server CPU-second',
    'socket errors',
  ];
  const each = (m: Measured, pick: (r: WrkRun) => number, digits = 0): string =>
    m.runs.map((r) => f(pick(r), digits)).join(' / ');
  const runsRow = (scenario: string, server: string, m: Measured): Row => [
    scenario,
    server,
    each(m, (r) => r.rps),
    each(m, (r) => r.p99, 2),
    each(m, (r) => r.serverCpu),
    each(m, (r) => Math.max(0, r.serverCpuBusy - r.serverCpu)),
    each(m, (r) => r.loadCpuBusy),
    each(m, (r) => r.rps / (r.serverCpu / 100)),
    f(m.socketErrors),
  ];
  const runRows: Row[] = [
    runsRow('single event', 'ingester', single),
    runsRow('single event', 'node:http baseline', baseSingle),
    ...(alerts ? [runsRow('single alert', 'Alertmanager', alerts)] : []),
    ...(comparedSingle
      ? [runsRow('single event', `ingester, node flags: ${compareFlags?.join(' ') || 'none'}`, comparedSingle)]
      : []),
    runsRow('100-event batch', 'ingester', batch),
    runsRow('single metric point', 'ingester', metric),
    ...(push ? [runsRow('single metric push', 'Pushgateway', push)] : []),
    runsRow(`Alertmanager notification (${NOTIFICATION_ALERTS} alerts)`, 'ingester, preset alertmanager', notification),
    runsRow('single event, unmapped', 'ingester', unmapped),
    runsRow('single event, custom mapping', 'ingester', mapped),
    ...(r.presets ?? []).flatMap((p) => [
      runsRow(`preset ${p.preset}`, 'ingester, native', p.native),
      ...(p.jsonata ? [runsRow(`preset ${p.preset}`, 'ingester, JSONata', p.jsonata)] : []),
    ]),
  ];
  return table(runsHeader, runRows, md, 99);
}

/** The ratios of compared servers in each round. */
function ratioTable(r: Results, md: boolean): string {
  const { single, baseSingle, alerts, compareFlags, comparedSingle, metric, push, unmapped, mapped } = r;
  // Ratios within each round (the two runs of a round are back to back): how steady the ratio is.
  const roundRatios = (a: Measured, b: Measured, pick: (r: WrkRun) => number, digits: number, suffix: string): string =>
    a.runs
      .map((r, i) => f((pick(r) / pick(b.runs[i] as WrkRun)) * (suffix === '%' ? 100 : 1), digits) + suffix)
      .join(' / ');
  const perCpu = (r: WrkRun): number => r.rps / (r.serverCpu / 100);
  const pairRows: Row[] = [
    ['single event: ingester / baseline requests/s', roundRatios(single, baseSingle, (r) => r.rps, 1, '%')],
    [
      'single event: ingester / baseline requests per server CPU-second',
      roundRatios(single, baseSingle, perCpu, 1, '%'),
    ],
    ['single event: ingester p99 / baseline p99', roundRatios(single, baseSingle, (r) => r.p99, 2, 'x')],
    ...(alerts
      ? [
          ['single event: ingester / Alertmanager requests/s', roundRatios(single, alerts, (r) => r.rps, 2, 'x')],
          [
            'single event: ingester / Alertmanager requests per server CPU-second',
            roundRatios(single, alerts, perCpu, 2, 'x'),
          ],
        ]
      : []),
    ...(comparedSingle
      ? [
          [
            `single event: ingester / ingester with node flags "${compareFlags?.join(' ') ?? ''}" requests/s`,
            roundRatios(single, comparedSingle, (r) => r.rps, 2, 'x'),
          ],
          [
            `single event: ingester / ingester with node flags "${compareFlags?.join(' ') ?? ''}" requests per server CPU-second`,
            roundRatios(single, comparedSingle, perCpu, 2, 'x'),
          ],
        ]
      : []),
    ...(push ? [['metric: ingester / Pushgateway requests/s', roundRatios(metric, push, (r) => r.rps, 2, 'x')]] : []),
    ['single event: custom mapping / unmapped requests/s', roundRatios(mapped, unmapped, (r) => r.rps, 1, '%')],
    [
      'single event: custom mapping / unmapped requests per server CPU-second',
      roundRatios(mapped, unmapped, perCpu, 1, '%'),
    ],
  ];
  return table(['ratio in each round', 'round 1 / 2 / 3 ...'], pairRows, md, 99);
}

/** How much of the server's core other processes took. */
function noiseLine(r: Results): string {
  const { singleResults, batch, metric, push, notification, unmapped, mapped } = r;
  const presetRuns = (r.presets ?? []).flatMap((p) => [p.native, ...(p.jsonata ? [p.jsonata] : [])]);
  const all = [
    ...singleResults,
    batch,
    metric,
    ...(push ? [push] : []),
    notification,
    unmapped,
    mapped,
    ...presetRuns,
  ].flatMap((m) => m.runs);
  const stolen = Math.max(...all.map((r) => r.serverCpuBusy - r.serverCpu));
  const noise =
    stolen > 10
      ? `Noise: in at least one run other processes used ${f(stolen)}% of CPU ${SERVER_CPU}, the server's core; those runs understate the server. ` +
        'Requests per server CPU-second (below) is the steadier measure of cost per core.'
      : `Noise: other processes used at most ${f(Math.max(0, stolen))}% of CPU ${SERVER_CPU} in any run.`;
  return noise;
}

function seriesTable({ series }: Results, md: boolean): string {
  const seriesHeader = ['100,000 active series (fresh ingester)', 'value'];
  const seriesRows: Row[] = [
    [
      'create: 10 POSTs of 10,000 distinct points',
      `${f(series.createMs)} ms (${f((SERIES / series.createMs) * 1000)} points/s)`,
    ],
    [
      `GET /metrics/ingested, median of ${RENDERS}`,
      `${f(series.renderMs, 1)} ms (min ${f(series.renderMin, 1)}, max ${f(series.renderMax, 1)})`,
    ],
    ['response size', `${f(series.bytes)} bytes (${f(series.bytes / MiB, 1)} MiB), ${f(series.lines)} samples`],
    ['ingester RSS after the renders', `${f(series.rssAfter)} MiB`],
    ['ingester peak RSS (VmHWM)', `${f(series.peakRss)} MiB`],
  ];
  return table(seriesHeader, seriesRows, md, 99);
}

/** The targets, PASS or MISS. */
function targetTable(r: Results, md: boolean): string {
  const {
    single,
    baseSingle,
    alerts,
    rssAfterSingle,
    batch,
    metric,
    push,
    notification,
    eventsPerNotification,
    unmapped,
    mapped,
    series,
  } = r;
  const targetHeader = ['target', 'measured', 'wanted', 'verdict'];
  const eventsPerSecond = batch.rps * 100;
  const targetRows: Row[] = [
    [
      'single event: ingester / baseline requests/s',
      `${f((single.rps / baseSingle.rps) * 100, 1)}%`,
      '>= 80%',
      verdict(single.rps >= 0.8 * baseSingle.rps),
    ],
    [
      'single event: ingester p99 / baseline p99',
      `${f(single.p99 / baseSingle.p99, 2)}x`,
      '<= 2x',
      verdict(single.p99 <= 2 * baseSingle.p99),
    ],
    [
      'single event: ingester / Alertmanager requests/s',
      alerts ? `${f(single.rps / alerts.rps, 2)}x` : 'n/a (no Alertmanager)',
      '>= 1.0x',
      alerts ? verdict(single.rps >= alerts.rps) : 'n/a',
    ],
    [
      'single event: ingester peak RSS (VmHWM)',
      `${f(rssAfterSingle.ingester)} MiB`,
      '<= 128 MiB',
      verdict(rssAfterSingle.ingester <= 128),
    ],
    ['100-event batches: events/s on one core', f(eventsPerSecond), '>= 100,000', verdict(eventsPerSecond >= 100_000)],
    [
      'metric points: ingester / Pushgateway requests/s',
      push ? `${f(metric.rps / push.rps, 2)}x` : 'n/a (no Pushgateway)',
      '>= 5x',
      push ? verdict(metric.rps >= 5 * push.rps) : 'n/a',
    ],
    [
      'preset alertmanager: events/s on one core',
      f(notification.rps * eventsPerNotification),
      '>= 20,000',
      verdict(notification.rps * eventsPerNotification >= 20_000),
    ],
    [
      'single event: custom mapping / unmapped requests/s',
      `${f((mapped.rps / unmapped.rps) * 100, 1)}%`,
      '>= 50%',
      verdict(mapped.rps >= 0.5 * unmapped.rps),
    ],
    [
      '100,000 series: /metrics/ingested render, median',
      `${f(series.renderMs, 1)} ms`,
      '< 300 ms',
      verdict(series.renderMs < 300),
    ],
    ['100,000 series: ingester RSS after', `${f(series.rssAfter)} MiB`, '< 400 MiB', verdict(series.rssAfter < 400)],
  ];

  return table(targetHeader, targetRows, md, 99);
}

/** Prints the tables, and writes them as markdown to BENCH_OUT when set. */
export function report(results: Results): void {
  const about =
    `Machine: ${machine()}; ingester node flags: ${deployedNodeFlags().join(' ') || '(none)'}. Servers pinned to CPU ${SERVER_CPU}, wrk (-t1 -c${CONNECTIONS}, ${DURATION_S} s runs, ${WARMUP_S} s warm-up) on CPU ${LOAD_CPU}; ` +
    `medians of ${RUNS} runs; compared servers measured alternately. Latencies are wrk's; peak RSS is VmHWM after the scenario.`;
  const render = (md: boolean): string =>
    [
      about,
      '',
      scenarioTable(results, md),
      '',
      presetTable(results, md),
      '',
      seriesTable(results, md),
      '',
      targetTable(results, md),
      '',
      noiseLine(results),
      '',
      'Each run (in order):',
      '',
      runsTable(results, md),
      '',
      ratioTable(results, md),
    ].join('\n');
  process.stdout.write(`\n${render(false)}\n`);
  if (process.env.BENCH_OUT) {
    writeFileSync(process.env.BENCH_OUT, `${render(true)}\n`);
    log(`markdown written to ${process.env.BENCH_OUT}`);
  }
}

/** BENCH_SINGLE_ONLY=1: scenario 1's runs, its ratios round by round and the peak RSS, printed and written to BENCH_OUT. */
export function singleReport(r: {
  single: Measured;
  baseSingle: Measured;
  alerts: Measured | undefined;
  /** The second ingester (BENCH_COMPARE_ENTRY or BENCH_COMPARE_NODE_OPTIONS), when there is one. */
  compared?: Measured | undefined;
  compareEntry?: string | undefined;
  rss: { ingester: number; baseline: number; alertmanager: number; compared: number };
}): void {
  const perCpu = (w: WrkRun): number => w.rps / (w.serverCpu / 100);
  const each = (m: Measured, pick: (w: WrkRun) => number, digits = 0): string =>
    m.runs.map((w) => f(pick(w), digits)).join(' / ');
  const servers: Array<[string, Measured | undefined, number]> = [
    ['ingester', r.single, r.rss.ingester],
    ['node:http baseline', r.baseSingle, r.rss.baseline],
    ['Alertmanager', r.alerts, r.rss.alertmanager],
    [`compared ingester (${r.compareEntry ?? 'node flags'})`, r.compared, r.rss.compared],
  ];
  const runs = (md: boolean): string =>
    table(
      [
        'server',
        'requests/s, each run',
        'requests per server CPU-second',
        'p99 ms',
        'server CPU %',
        `CPU ${SERVER_CPU} used by others %`,
        'peak RSS MiB',
      ],
      servers
        .filter((s): s is [string, Measured, number] => s[1] !== undefined)
        .map(([name, m, rss]) => [
          name,
          each(m, (w) => w.rps),
          each(m, perCpu),
          each(m, (w) => w.p99, 2),
          each(m, (w) => w.serverCpu),
          each(m, (w) => Math.max(0, w.serverCpuBusy - w.serverCpu)),
          f(rss),
        ]),
      md,
      99,
    );
  const ratio = (a: Measured, b: Measured, pick: (w: WrkRun) => number, pct: boolean): string => {
    const rounds = a.runs.map((w, i) => pick(w) / pick(b.runs[i] as WrkRun));
    const show = (x: number): string => (pct ? `${f(x * 100, 1)}%` : `${f(x, 2)}x`);
    return `${show(median(rounds))} (rounds ${rounds.map(show).join(' / ')})`;
  };
  const ratios = (md: boolean): string =>
    table(
      ['ratio in each round', 'requests/s: median (rounds)', 'per server CPU-second: median (rounds)'],
      [
        [
          'ingester / node:http baseline',
          ratio(r.single, r.baseSingle, (w) => w.rps, true),
          ratio(r.single, r.baseSingle, perCpu, true),
        ],
        ...(r.alerts
          ? [
              [
                'ingester / Alertmanager',
                ratio(r.single, r.alerts, (w) => w.rps, false),
                ratio(r.single, r.alerts, perCpu, false),
              ],
            ]
          : []),
        ...(r.compared
          ? [
              [
                'compared ingester / node:http baseline',
                ratio(r.compared, r.baseSingle, (w) => w.rps, true),
                ratio(r.compared, r.baseSingle, perCpu, true),
              ],
              ...(r.alerts
                ? [
                    [
                      'compared ingester / Alertmanager',
                      ratio(r.compared, r.alerts, (w) => w.rps, false),
                      ratio(r.compared, r.alerts, perCpu, false),
                    ],
                  ]
                : []),
              [
                'ingester / compared ingester',
                ratio(r.single, r.compared, (w) => w.rps, false),
                ratio(r.single, r.compared, perCpu, false),
              ],
            ]
          : []),
      ],
      md,
      99,
    );
  const head = `Single events only (BENCH_SINGLE_ONLY=1): ${machine()}; ingester node flags: ${deployedNodeFlags().join(' ') || '(none)'}; ${RUNS} rounds of ${DURATION_S} s, ${CONNECTIONS} connections`;
  process.stdout.write(`\n${head}\n\n${runs(false)}\n\n${ratios(false)}\n`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${head}\n\n${runs(true)}\n\n${ratios(true)}\n`);
}
