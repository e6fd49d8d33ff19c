/**
 * `intake status`: what each integration and API key received on a running ingester
 * (ingester/activity/), from its admin listener. In Kubernetes mode the same is in
 * status.activity (kubectl get, describe).
 */
import { Command } from 'commander';
import type { ActivityReport } from '../../api/activity.js';
import { activityTable } from '../activity-table.js';
import { adminCall } from '../admin-client.js';
import { adminUrlOption, outputFormat, outputOption } from '../options.js';
import { formatted } from '../output.js';

export function statusCommand(): Command {
  return new Command('status')
    .description(
      'what each integration and API key received on a running ingester: last event, events and refusals over the last hour by reason, recent refusals',
    )
    .addOption(adminUrlOption())
    .addOption(outputOption())
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      const format = outputFormat(opts);
      const body = await adminCall(`${opts.adminUrl}/status/activity`, 'GET');
      process.stdout.write(formatted(format, body, () => activityTable(body as unknown as ActivityReport)));
    });
}
