/**
 * `intake status`: what each integration and API key received on a running ingester
 * (ingester/activity/), and how delivery goes to each destination (ingester/destinations/status/),
 * from its admin listener. In Kubernetes mode the same is in status.activity and a team
 * Destination's status.delivery (kubectl get, describe).
 */
import { Command } from 'commander';
import type { ActivityReport } from '../../api/activity.js';
import type { DeliveryReport } from '../../api/delivery-status.js';
import { ConfigError } from '../../common/config-files.js';
import { activityTable } from '../activity-table.js';
import { adminCall, AdminCallError } from '../admin-client.js';
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
      const [activityRead, deliveryRead] = await Promise.allSettled([
        adminCall(`${opts.adminUrl}/status/activity`, 'GET'),
        deliveryReport(String(opts.adminUrl)),
      ]);
      // Either part failing fails the command (exit 2, the error on stderr), the activity's first.
      if (activityRead.status === 'rejected') throw activityRead.reason;
      if (deliveryRead.status === 'rejected') throw deliveryRead.reason;
      const activity = activityRead.value;
      const delivery = deliveryRead.value;
      // The activity report as before, with the delivery report beside it under `delivery`.
      const body = delivery ? { ...activity, delivery } : activity;
      process.stdout.write(
        formatted(format, body, () => {
          const table = activityTable(activity as unknown as ActivityReport);
          return delivery
            ? `${table}\n${deliveryTable(delivery)}`
            : `${table}\ndelivery: this ingester does not report it (GET /status/delivery)\n`;
        }),
      );
    });
}

/**
 * The replica's delivery report; undefined from an ingester older than the report, which answers
 * 404 (its activity is still worth printing). Any other failure (the listener not reached, an
 * error status, an answer that is not a delivery report) throws a ConfigError that names it: a
 * report that cannot be read must not pass for one that does not exist.
 */
export async function deliveryReport(adminUrl: string): Promise<DeliveryReport | undefined> {
  const what = 'cannot read the delivery report (GET /status/delivery)';
  let body: Record<string, unknown>;
  try {
    body = await adminCall(`${adminUrl}/status/delivery`, 'GET');
  } catch (err) {
    if (err instanceof AdminCallError && err.status === 404) return undefined;
    throw new ConfigError(`${what}: ${(err as Error).message}`, { cause: err });
  }
  if (typeof body !== 'object' || body === null || !Array.isArray(body.destinations))
    throw new ConfigError(`${what}: the answer has no list of destinations`);
  return body as unknown as DeliveryReport;
}
