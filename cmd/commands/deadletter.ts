/**
 * `intake deadletter list|replay|bulk-replay|replays|cancel`: dead letters (mapping and delivery failures) live in the
 * ingester's store; these talk to its admin listener (ingester/dead-letters/admin-endpoints.ts).
 */
import { Command, Option } from 'commander';
import { inertText } from '../../common/sender-text.js';
import { adminCall } from '../admin-client.js';
import { adminUrlOption, outputFormat, outputOption } from '../options.js';
import { columns, formatted } from '../output.js';

type Opts = Record<string, string | boolean | undefined>;

type Letter = {
  id: string;
  kind: string;
  at: string;
  namespace: string;
  integration: string;
  destination?: string;
  reason: string;
  attempts?: number;
};

type ReplayResult = {
  id: string;
  kind: string;
  namespace?: string;
  integration: string;
  destination?: string;
  result: string;
  events?: number;
  message?: string;
};

export function deadletterCommand(): Command {
  const deadletter = new Command('deadletter').description(
    'what intake accepted but could not finish, kept for replay: payloads a mapping could not turn into events (kind mapping, answered 422) and events a destination gave up on (kind delivery)',
  );
  deadletter.addCommand(
    withFilters(
      new Command('list').description(
        'list kept dead letters (id, time, kind, namespace/integration, destination, why)',
      ),
    )
      .addOption(outputOption())
      .action(list),
  );
  deadletter.addCommand(
    withFilters(
      new Command('replay').description(
        "replay kept dead letters once each: a mapping failure through its integration's current mapping, a delivery failure back to its destination; replayed ones are removed",
      ),
    )
      .addOption(outputOption())
      .action(replay),
  );
  deadletter.addCommand(
    withFilters(
      new Command('bulk-replay').description(
        'replay every kept dead letter the filters select, in the background on the ingester (one per namespace on a replica): prints the bulk replay and its progress; follow it with `replays ID`, stop it with `cancel ID`',
      ),
      { limit: false },
    )
      .option(
        '--rate <letters/s>',
        "at most this many letters a second (default and most: the ingester's deadLetter.bulkReplay.maxRate, 1000)",
      )
      .option('--wait', 'follow it until it ends, printing its progress')
      .addOption(outputOption())
      .action(bulkReplay),
  );
  deadletter.addCommand(
    new Command('replays')
      .description(
        "the ingester's bulk replays (running, and the last finished ones) with their progress: matched, replayed, failed, skipped, remaining",
      )
      .argument('[id]', 'only this one')
      .addOption(adminUrlOption())
      .addOption(outputOption())
      .action(showReplays),
  );
  deadletter.addCommand(
    new Command('cancel')
      .description(
        'cancel a bulk replay: it stops before its next letter (the letters it did not take stay dead letters)',
      )
      .argument('<id>', 'the bulk replay')
      .addOption(adminUrlOption())
      .addOption(outputOption())
      .action(cancel),
  );
  return deadletter;
}

const withFilters = (c: Command, { limit = true } = {}): Command => {
  c.addOption(adminUrlOption())
    .addOption(new Option('--kind <kind>', 'only this kind').choices(['mapping', 'delivery']))
    .option('--namespace <ns>', 'only this namespace')
    .option('--integration <name>', 'only this integration')
    .option('--destination <name>', 'only this destination (kind delivery)')
    .option('--id <id,...>', 'only these dead letters (ids from list)')
    .option('--reason <reason>', 'only this reason (as list shows it; a prefix ends in *, e.g. http_5*)')
    .option('--since <time>', 'only those kept at or after this time: RFC 3339, or a duration ago (2h)')
    .option('--until <time>', 'only those kept before this time: RFC 3339, or a duration ago (30m)');
  return limit ? c.option('--limit <n>', 'at most this many (default 1000)') : c;
};

const FILTER_KEYS = [
  'kind',
  'namespace',
  'integration',
  'destination',
  'id',
  'seq',
  'limit',
  'reason',
  'since',
  'until',
  'rate',
] as const;

const query = (opts: Opts, extra: Record<string, string> = {}): string => {
  const q = new URLSearchParams(extra);
  for (const key of FILTER_KEYS) if (typeof opts[key] === 'string') q.set(key, opts[key]);
  return q.size > 0 ? `?${q}` : '';
};

async function list(opts: Opts): Promise<void> {
  const format = outputFormat(opts);
  // For a program, the whole letters: payloads and events included.
  const body = await adminCall(
    `${opts.adminUrl}/deadletter${query(opts, format === 'table' ? {} : { payload: 'true' })}`,
    'GET',
  );
  process.stdout.write(formatted(format, body, () => letterTable(body)));
}

/** kubectl's shape: one row a letter; its reason quotes the mapping's or the receiver's words, printed inert. */
export function letterTable(body: Record<string, unknown>): string {
  const entries = (body.entries ?? []) as Letter[];
  const rows = entries.map((e) => [
    e.id,
    e.at,
    e.kind,
    `${e.namespace}/${e.integration}`,
    e.destination ?? '',
    e.destination ? String(e.attempts) : '',
    e.reason,
  ]);
  const table =
    rows.length > 0 ? inertRows(['ID', 'KEPT', 'KIND', 'INTEGRATION', 'DESTINATION', 'ATTEMPTS', 'REASON'], rows) : '';
  return `${table}${entries.length} dead letter(s) listed; the store (${inertText(body.store)}) holds ${inertText(body.bytes)} bytes\n`;
}

/** A header and rows, each cell inert, in columns. */
const inertRows = (header: string[], rows: string[][]): string =>
  `${columns([header, ...rows].map((r) => r.map((c) => inertText(c))))}\n`;

async function replay(opts: Opts): Promise<void> {
  const format = outputFormat(opts);
  const body = await adminCall(`${opts.adminUrl}/deadletter/replay${query(opts)}`, 'POST');
  process.stdout.write(formatted(format, body, () => replayTable(body)));
  if (Number(body.failed) > 0) process.exitCode = 1;
}

export function replayTable(body: Record<string, unknown>): string {
  const results = (body.results ?? []) as ReplayResult[];
  const rows = results.map((r) => [
    r.id,
    r.kind,
    r.namespace === undefined ? r.integration : `${r.namespace}/${r.integration}`,
    r.result === 'replayed'
      ? r.kind === 'mapping'
        ? `handed on ${r.events} event(s)`
        : `handed back to ${r.destination}`
      : `${r.result}: ${r.message}`,
  ]);
  const table = rows.length > 0 ? inertRows(['ID', 'KIND', 'INTEGRATION', 'RESULT'], rows) : '';
  return `${table}${body.replayed} replayed, ${body.failed} failed, ${body.skipped} skipped (held by another replay)\n`;
}

type Progress = {
  id: string;
  state: string;
  filter: Record<string, unknown>;
  startedAt: string;
  matched: number;
  replayed: number;
  failed: number;
  skipped: number;
  remaining: number;
  message?: string;
  failures?: Array<{ id: string; message: string }>;
};

const FOLLOW_MS = 1000;

async function bulkReplay(opts: Opts): Promise<void> {
  const format = outputFormat(opts);
  let body = await adminCall(`${opts.adminUrl}/deadletter/replays${query(opts)}`, 'POST');
  if (opts.wait) {
    if (format === 'table') process.stdout.write(progressTable([body as unknown as Progress]));
    while (body.state === 'running') {
      await new Promise((r) => setTimeout(r, FOLLOW_MS));
      body = await adminCall(`${opts.adminUrl}/deadletter/replays/${encodeURIComponent(String(body.id))}`, 'GET');
      if (format === 'table') process.stdout.write(progressTable([body as unknown as Progress], false));
    }
    if (format !== 'table') process.stdout.write(formatted(format, body, () => ''));
    if (Number(body.failed) > 0 || body.state === 'failed') process.exitCode = 1;
    return;
  }
  process.stdout.write(formatted(format, body, () => progressTable([body as unknown as Progress])));
}

async function showReplays(id: string | undefined, opts: Opts): Promise<void> {
  const format = outputFormat(opts);
  const base = `${opts.adminUrl}/deadletter/replays`;
  const body = await adminCall(id ? `${base}/${encodeURIComponent(id)}` : base, 'GET');
  const rows = (id ? [body] : body.replays) as Progress[];
  process.stdout.write(formatted(format, body, () => progressTable(rows)));
}

async function cancel(id: string, opts: Opts): Promise<void> {
  const format = outputFormat(opts);
  const body = await adminCall(`${opts.adminUrl}/deadletter/replays/${encodeURIComponent(id)}/cancel`, 'POST');
  process.stdout.write(formatted(format, body, () => progressTable([body as unknown as Progress])));
}

const PROGRESS_HEADER = ['ID', 'STATE', 'MATCHED', 'REPLAYED', 'FAILED', 'SKIPPED', 'REMAINING', 'STARTED', 'FILTER'];

/**
 * kubectl's shape: one row a bulk replay, its state, counts and filters (and its message); the
 * last failures under the table. Without the header (`--wait`'s later lines) a row is padded to
 * the header's widths, so the lines under it stay in its columns.
 */
export function progressTable(rows: Progress[], header = true): string {
  if (header && rows.length === 0) return `${PROGRESS_HEADER.join('  ')}\nno bulk replays on this replica\n`;
  const cells = rows.map((p) => {
    const filter = Object.entries(p.filter ?? {})
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(',');
    const row = [
      p.id,
      p.state,
      p.matched,
      p.replayed,
      p.failed,
      p.skipped,
      p.remaining,
      p.startedAt,
      filter || '(all)',
    ];
    return [...row.map(String), ...(p.message ? [p.message] : [])];
  });
  const lines = columns([PROGRESS_HEADER, ...cells].map((r) => r.map((c) => inertText(c)))).split('\n');
  const failures = rows.flatMap((p) =>
    (p.failures ?? []).map((f) => `    failed ${inertText(f.id)}: ${inertText(f.message)}\n`),
  );
  return `${(header ? lines : lines.slice(1)).map((l) => `${l}\n`).join('')}${failures.join('')}`;
}
