/**
 * `intake status`: what each integration and API key received on a running ingester
 * (ingester/activity/), and how delivery goes to each destination (ingester/destinations/status/),
 * from its admin listener. In Kubernetes mode the same is in status.activity and a team
 * Destination's status.delivery (kubectl get, describe).
 */
import { Command } from 'commander';
import type { ActivityReport } from '../../api/activity.js';
import type { DeliveryReport } from '../../api/delivery-status.js';
import { activityTable } from '../activity-table.js';
import { adminCall } from '../admin-client.js';
import { deliveryTable } from '../delivery-table.js';
import { adminUrlOption, outputFormat, outputOption } from '../options.js';
import { formatted } from '../output.js';

export function statusCommand(): Command {
  return new Command('status')
    .description(
      'what each integration and API key received on a running ingester (last event, events and refusals over the last hour by reason, recent refusals), and delivery per destination (circuit, paused, backlog, oldest pending, last success and failure)',
    )
    .addOption(adminUrlOption())
    .addOption(outputOption())
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      const format = outputFormat(opts);
      const [activity, delivery] = await Promise.all([
        adminCall(`${opts.adminUrl}/status/activity`, 'GET'),
        // An ingester older than the delivery report answers 404: its activity is still worth printing.
        adminCall(`${opts.adminUrl}/status/delivery`, 'GET').catch(() => undefined),
      ]);
      // The activity report as before, with the delivery report beside it under `delivery`.
      const body = delivery ? { ...activity, delivery } : activity;
      process.stdout.write(
        formatted(format, body, () => {
          const table = activityTable(activity as unknown as ActivityReport);
          return delivery
            ? `${table}\n${deliveryTable(delivery as unknown as DeliveryReport)}`
            : `${table}\ndelivery: this ingester does not report it (GET /status/delivery)\n`;
        }),
      );
    });
}
