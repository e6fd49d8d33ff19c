/**
 * `intake deadletter list|replay`: dead letters (mapping and delivery failures) live in the
 * ingester's store; these talk to its admin listener (ingester/dead-letters/admin-endpoints.ts).
 */
import { Command, Option } from 'commander';
import { inertText } from '../../common/sender-text.js';
import { adminCall } from '../admin-client.js';
import { adminUrlOption, outputFormat, outputOption } from '../options.js';
import { formatted } from '../output.js';

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
  return deadletter;
}

const withFilters = (c: Command): Command =>
  c
    .addOption(adminUrlOption())
    .addOption(new Option('--kind <kind>', 'only this kind').choices(['mapping', 'delivery']))
    .option('--namespace <ns>', 'only this namespace')
    .option('--integration <name>', 'only this integration')
    .option('--destination <name>', 'only this destination (kind delivery)')
    .option('--id <id,...>', 'only these dead letters (ids from list)')
    .option('--limit <n>', 'at most this many (default 1000)');

const query = (opts: Opts, extra: Record<string, string> = {}): string => {
  const q = new URLSearchParams(extra);
  for (const key of ['kind', 'namespace', 'integration', 'destination', 'id', 'seq', 'limit'] as const)
    if (typeof opts[key] === 'string') q.set(key, opts[key]);
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

/** One line a letter; its reason quotes the mapping's or the receiver's words, printed inert. */
export function letterTable(body: Record<string, unknown>): string {
  const entries = (body.entries ?? []) as Letter[];
  const lines = entries.map((e) => {
    const to = e.destination ? `  -> ${e.destination} after ${e.attempts} attempt(s)` : '';
    return `${inertText(`${e.id}  ${e.at}  ${e.kind}  ${e.namespace}/${e.integration}${to}  ${e.reason}`)}\n`;
  });
  return `${lines.join('')}${entries.length} dead letter(s) listed; the store (${inertText(body.store)}) holds ${inertText(body.bytes)} bytes\n`;
}

async function replay(opts: Opts): Promise<void> {
  const format = outputFormat(opts);
  const body = await adminCall(`${opts.adminUrl}/deadletter/replay${query(opts)}`, 'POST');
  process.stdout.write(formatted(format, body, () => replayTable(body)));
  if (Number(body.failed) > 0) process.exitCode = 1;
}

export function replayTable(body: Record<string, unknown>): string {
  const lines = ((body.results ?? []) as ReplayResult[]).map((r) => {
    const what =
      r.result === 'replayed'
        ? r.kind === 'mapping'
          ? `handed on ${r.events} event(s)`
          : `handed back to ${r.destination}`
        : `${r.result}: ${r.message}`;
    return `${inertText(`${r.id}  ${r.kind}  ${r.integration}  ${what}`)}\n`;
  });
  return `${lines.join('')}${body.replayed} replayed, ${body.failed} failed, ${body.skipped} skipped (held by another replay)\n`;
}
