/**
 * `intake undelivered list|replay`, deprecated for one release: it is
 * `intake deadletter list|replay --kind delivery`. It calls the deprecated admin routes, which
 * answer as before.
 */
import { Command } from 'commander';
import { inertJson, inertText } from '../../common/sender-text.js';
import { adminCall } from '../admin-client.js';
import { adminUrlOption } from '../options.js';

type Opts = Record<string, string | boolean | undefined>;

const deprecated = (): void =>
  void process.stderr.write(
    'intake: `intake undelivered` is deprecated and goes away in the next release; use `intake deadletter list|replay --kind delivery`\n',
  );

const query = (opts: Opts): string => {
  const q = new URLSearchParams();
  for (const key of ['destination', 'seq', 'limit'] as const) if (typeof opts[key] === 'string') q.set(key, opts[key]);
  return q.size > 0 ? `?${q}` : '';
};

export function undeliveredCommand(): Command {
  const undelivered = new Command('undelivered').description('deprecated: use `intake deadletter --kind delivery`');
  undelivered
    .command('list')
    .description('deprecated: intake deadletter list --kind delivery')
    .addOption(adminUrlOption())
    .option('--destination <name>', 'only this destination')
    .option('--limit <n>', 'at most this many (default 1000)')
    .option('--json', 'print the full JSON, events included')
    .action(async (opts: Opts) => {
      deprecated();
      const body = await adminCall(`${opts.adminUrl}/destinations/deadletter${query(opts)}`, 'GET');
      if (opts.json) return void process.stdout.write(`${inertJson(JSON.stringify(body, null, 2))}\n`);
      const items = body.items as Array<{
        seq: number;
        destination: string;
        reason: string;
        error: string;
        attempts: number;
        failedAt: string;
        event: { id: string; namespace: string; integration: string };
      }>;
      for (const i of items)
        process.stdout.write(
          `${inertText(`${i.seq}  ${i.failedAt}  ${i.destination}  ${i.reason} after ${i.attempts} attempt(s)  ${i.event.namespace}/${i.event.integration}  ${i.event.id}  ${i.error}`)}\n`,
        );
      process.stdout.write(`${items.length} event(s) kept\n`);
    });
  undelivered
    .command('replay')
    .description('deprecated: intake deadletter replay --kind delivery')
    .addOption(adminUrlOption())
    .option('--destination <name>', 'only this destination')
    .option('--seq <n,...>', 'only these positions (from list)')
    .action(async (opts: Opts) => {
      deprecated();
      const body = await adminCall(`${opts.adminUrl}/destinations/deadletter/replay${query(opts)}`, 'POST');
      process.stdout.write(`${body.replayed} event(s) handed back for delivery\n`);
    });
  return undelivered;
}
