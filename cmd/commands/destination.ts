/**
 * `intake destination list|get|pause|resume`: a running ingester's destinations, their circuit
 * and pause, and pause and resume at runtime, through its admin listener
 * (ingester/destinations/admin-endpoints.ts). With the bus a pause or resume holds on every replica.
 */
import { Command } from 'commander';
import { inertText } from '../../common/sender-text.js';
import { adminCall } from '../admin-client.js';
import { adminUrlOption, outputFormat, outputOption } from '../options.js';
import { columns, formatted } from '../output.js';

type Opts = Record<string, string | boolean | undefined>;

interface DestinationState {
  name: string;
  kind: string;
  circuit: string;
  paused: boolean;
  reason?: string;
  by?: string;
  since?: string;
  lastFailure?: { at: string; reason: string; error: string };
}

export function destinationCommand(): Command {
  const destination = new Command('destination').description(
    "a running ingester's destinations: circuit state and pause; pause and resume delivery to one (its events are held meanwhile, never dropped or dead-lettered)",
  );
  const withOptions = (c: Command): Command => c.addOption(adminUrlOption()).addOption(outputOption());
  destination.addCommand(
    withOptions(new Command('list').description('every destination: kind, circuit, paused and why')).action(
      async (opts: Opts) => show(opts, await adminCall(`${opts.adminUrl}/destinations`, 'GET')),
    ),
  );
  destination.addCommand(
    withOptions(
      new Command('get').argument('<name>').description("one destination's state, with the last failure"),
    ).action(async (name: string, opts: Opts) =>
      show(opts, await adminCall(`${opts.adminUrl}/destinations/${encodeURIComponent(name)}`, 'GET')),
    ),
  );
  destination.addCommand(
    withOptions(
      new Command('pause')
        .argument('<name>')
        .description('hold the destination\'s events until "intake destination resume"'),
    ).action(async (name: string, opts: Opts) =>
      show(opts, await adminCall(`${opts.adminUrl}/destinations/${encodeURIComponent(name)}/pause`, 'POST')),
    ),
  );
  destination.addCommand(
    withOptions(
      new Command('resume')
        .argument('<name>')
        .description(
          'deliver the held events again, at the rate limit: ends a pause by this command or an auto-pause (suspend: true in the settings is ended there)',
        ),
    ).action(async (name: string, opts: Opts) =>
      show(opts, await adminCall(`${opts.adminUrl}/destinations/${encodeURIComponent(name)}/resume`, 'POST')),
    ),
  );
  return destination;
}

function show(opts: Opts, body: Record<string, unknown>): void {
  process.stdout.write(formatted(outputFormat(opts), body, () => destinationTable(body)));
}

/** kubectl's shape: one row a destination; the last failure quotes the receiver, printed inert. */
export function destinationTable(body: Record<string, unknown>): string {
  const list = (Array.isArray(body.destinations) ? body.destinations : [body]) as DestinationState[];
  const rows = [
    ['NAME', 'KIND', 'CIRCUIT', 'PAUSED', 'REASON', 'SINCE', 'LAST FAILURE'],
    ...list.map((d) => [
      d.name,
      d.kind,
      d.circuit,
      d.paused ? 'True' : 'False',
      d.paused ? `${d.reason === 'auto' ? 'AutoPaused' : 'Suspended'} (${d.by})` : '',
      d.since ?? '',
      d.lastFailure ? `${d.lastFailure.at} ${d.lastFailure.reason}: ${d.lastFailure.error}` : '',
    ]),
  ].map((r) => r.map((c) => inertText(c)));
  return `${columns(rows)}\n`;
}
