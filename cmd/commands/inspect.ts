/**
 * `intake inspect list|show|replay`: the requests an integration that enabled the event inspector
 * received, as the ingester's admin listener keeps them (ingester/inspector/admin-endpoints.ts).
 * With the bus any replica answers for all of them.
 */
import { Command } from 'commander';
import type { CapturedRequest, CapturedRequestSummary } from '../../api/inspector.js';
import { ConfigError } from '../../common/config-files.js';
import { inertText } from '../../common/sender-text.js';
import { adminCall } from '../admin-client.js';
import { adminUrlOption, outputFormat, outputOption } from '../options.js';
import { columns, formatted } from '../output.js';

type Opts = Record<string, string | boolean | undefined>;

export function inspectCommand(): Command {
  const inspect = new Command('inspect').description(
    'the last requests of an integration that enabled the event inspector (spec.inspect): body, mapped events, routing and delivery attempts',
  );
  inspect.addCommand(
    new Command('list')
      .description('its kept requests, newest first')
      .argument('<namespace/integration>')
      .addOption(adminUrlOption())
      .addOption(outputOption())
      .action(async (target: string, opts: Opts) => {
        const body = await adminCall(`${opts.adminUrl}${pathOf(target)}`, 'GET');
        process.stdout.write(formatted(outputFormat(opts), body, () => listTable(body)));
      }),
  );
  inspect.addCommand(
    new Command('show')
      .description('one request: headers, body, events, where each goes, delivery attempts')
      .argument('<namespace/integration>')
      .argument('<id>')
      .addOption(adminUrlOption())
      .addOption(outputOption())
      .action(async (target: string, id: string, opts: Opts) => {
        const body = await adminCall(`${opts.adminUrl}${pathOf(target)}/${encodeURIComponent(id)}`, 'GET');
        process.stdout.write(
          formatted(outputFormat(opts), body, () => requestText(body as unknown as CapturedRequest)),
        );
      }),
  );
  inspect.addCommand(
    new Command('replay')
      .description('hands one captured event to its destinations again, as a new event')
      .argument('<namespace/integration>')
      .argument('<id>')
      .option('--event <index>', 'the event of the request (0 first)', '0')
      .addOption(adminUrlOption())
      .addOption(outputOption())
      .action(async (target: string, id: string, opts: Opts) => {
        const event = Number(opts.event);
        if (!Number.isInteger(event) || event < 0) throw new ConfigError('--event must be an index: 0, 1, ...');
        const body = await adminCall(`${opts.adminUrl}${pathOf(target)}/${encodeURIComponent(id)}/replay`, 'POST', {
          event,
        });
        process.stdout.write(formatted(outputFormat(opts), body, () => `replayed as event ${inertText(body.id)}\n`));
      }),
  );
  return inspect;
}

function pathOf(target: string): string {
  const [namespace, integration, ...rest] = target.split('/');
  if (!namespace || !integration || rest.length > 0)
    throw new ConfigError('name the integration as <namespace>/<integration>');
  return `/inspector/${encodeURIComponent(namespace)}/${encodeURIComponent(integration)}`;
}

export function listTable(body: Record<string, unknown>): string {
  const requests = (body.requests ?? []) as CapturedRequestSummary[];
  const rows = requests.map((r) =>
    [
      r.id,
      r.receivedAt,
      r.remoteAddress,
      String(r.status),
      r.refusal?.code ?? '',
      String(r.eventCount),
      `${r.bodyBytes}${r.bodyTruncated ? ' (cut)' : ''}`,
    ].map((cell) => inertText(cell)),
  );
  const table = columns([['ID', 'RECEIVED', 'FROM', 'STATUS', 'REFUSAL', 'EVENTS', 'BODY BYTES'], ...rows]);
  return `${table}\n${requests.length} request(s) kept\n`;
}

/** One request for a person: what came, what it became, where each event went. */
export function requestText(r: CapturedRequest): string {
  const lines = [
    `${r.id}  ${r.receivedAt}  from ${r.remoteAddress}  ${r.status}${r.refusal ? ` ${r.refusal.code}: ${r.refusal.message}` : ''}`,
    'headers:',
    ...Object.entries(r.headers).map(([k, v]) => `  ${k}: ${v}`),
    `body (${r.bodyBytes} bytes${r.bodyTruncated ? ', cut' : ''}):`,
    `  ${r.body}`,
    `events (${r.events?.length ?? 0}${r.eventsTruncated ? ', more left out' : ''}):`,
  ];
  (r.events ?? []).forEach((e, i) => {
    const route = r.routing?.[i];
    const to =
      route?.droppedBy !== undefined
        ? `dropped by rule ${route.droppedBy}`
        : `-> ${route?.destinations.join(', ') || 'nowhere'}`;
    const rules = route && route.matched.length > 0 ? ` (rules ${route.matched.join(', ')})` : '';
    lines.push(`  [${i}] ${JSON.stringify(e)}`, `      ${to}${rules}`);
    for (const a of (r.attempts ?? []).filter((x) => x.event === i))
      lines.push(
        `      ${a.at}  ${a.destination}  ${a.status ?? '-'}  ${a.latencyMs} ms  ${a.outcome}${a.error ? `  ${a.error}` : ''}`,
      );
  });
  return `${lines.map((l) => inertText(l)).join('\n')}\n`;
}
