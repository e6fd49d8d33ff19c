/** Starts the built ingester as a child process on free loopback ports, for end-to-end tests. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import {
  deprecationWarnings,
  spawnIntake,
  untilAnswers,
  type IntakeOptions,
  type IntakeProcess,
} from '../../support/intake-process.js';
import { ROOT } from '../../support/paths.js';
import { freePort } from '../../support/ports.js';

export const EXAMPLE = join(ROOT, 'examples/intake.yaml');
// The demo credentials and a tenant's route, shared with the unit tests and the benchmarks.
export { API_KEY, basic, DEMO, tenantAuth, tenantRoute } from '../../support/credentials.js';

export interface RunningIngester extends IntakeProcess {
  url: string;
  adminUrl: string;
  configPath: string;
  port: number;
}

export interface StartOptions extends IntakeOptions {
  /** Wait for /readyz (default true); false: for /healthz. */
  waitReady?: boolean;
  /**
   * The test gives settings of an earlier spelling on purpose: their deprecation warnings are
   * expected. Otherwise a warning at start-up fails the start (the tests use the current keys).
   */
  expectDeprecations?: boolean;
}

/** Copies the example config, applies `edit` to it, and starts the ingester with it. */
export async function startIngester(
  edit: (config: Record<string, unknown>) => void = () => {},
  options: StartOptions = {},
): Promise<RunningIngester> {
  const config = parse(readFileSync(EXAMPLE, 'utf8')) as Record<string, unknown>;
  edit(config);
  const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-'));
  const configPath = join(dir, 'intake.yaml');
  writeFileSync(configPath, stringify(config));
  const probe = options.waitReady === false ? '/healthz' : '/readyz';
  // A free port can be taken by a parallel test between freePort() and the ingester's listen: the
  // ingester then exits with EADDRINUSE, and is started again on other ports (a few times at most).
  for (let attempt = 1; ; attempt++) {
    const [port, adminPort] = [await freePort(), await freePort()];
    const proc = spawnIntake(
      ['ingester', '--config', configPath, '--listen', `127.0.0.1:${port}`, '--admin-listen', `127.0.0.1:${adminPort}`],
      options,
    );
    const adminUrl = `http://127.0.0.1:${adminPort}`;
    try {
      await untilAnswers(proc, 'ingester ready', async () => (await fetch(`${adminUrl}${probe}`)).ok, 15_000, 50);
    } catch (err) {
      if (attempt < 3 && proc.output().includes('EADDRINUSE')) continue;
      throw err;
    }
    return await checkedStart(proc, options, { url: `http://127.0.0.1:${port}`, adminUrl, configPath, port });
  }
}

/** The started ingester, unless it warned of deprecated settings the test did not expect. */
async function checkedStart(
  proc: IntakeProcess,
  options: StartOptions,
  where: Omit<RunningIngester, keyof IntakeProcess>,
): Promise<RunningIngester> {
  const deprecated = deprecationWarnings(proc.output());
  if (deprecated.length > 0 && !options.expectDeprecations) {
    await proc.stop('SIGKILL');
    throw new Error(
      `the ingester warned of deprecated settings: give the current keys (docs/configuration.md), or start it with { expectDeprecations: true } if that is the test's point:\n${deprecated.join('\n')}`,
    );
  }
  return { ...proc, ...where };
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; text: string; json: () => Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body:
      typeof body === 'string'
        ? body
        : Buffer.isBuffer(body)
          ? (new Uint8Array(body) as unknown as string)
          : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

export function eventLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
