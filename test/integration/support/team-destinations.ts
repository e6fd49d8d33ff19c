/**
 * The delivery path a team's Destination takes: the operator, allowed to publish routes to one
 * platform destination, and an ingester in Kubernetes mode that delivers to that platform
 * destination and to team receivers on loopback (which the address guard refuses to a team's URL
 * by default), with a spool in `dir`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Proc } from './cluster.js';
import type { OperatorSuite } from './suite.js';

export interface PlatformDestination {
  name: string;
  /** The receiver's URL (an HTTP destination). */
  url: string;
  /** The destination of every event no rule sends elsewhere. */
  default?: boolean;
}

/** Starts the operator and the ingester; answers the ingester. */
export async function startTeamDeliveryPath(
  suite: Pick<OperatorSuite<string[]>, 'startOperator' | 'startIngester'>,
  dir: string,
  platform: PlatformDestination,
): Promise<Proc> {
  await suite.startOperator(['--destinations', platform.name]);
  const config = join(dir, 'intake.yaml');
  writeFileSync(
    config,
    `authThrottle: {failures: 1000000, window: 1m, block: 1s}
addressGuard: {allowedCIDRs: [127.0.0.0/8, '::1/128']}
spool: {path: ${join(dir, 'storage')}}
destinations:
  - {name: ${platform.name},${platform.default ? ' default: true,' : ''} http: {url: '${platform.url}'}}
`,
  );
  return suite.startIngester(['--config', config]);
}
