/** Starts the built ingester as a child process on free loopback ports, for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ROOT } from '../../support/paths.js';
import { freePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';

export const EXAMPLE = join(ROOT, 'examples/intake.yaml');
// The demo credentials and a tenant's route, shared with the unit tests and the benchmarks.
export { API_KEY, basic, DEMO, tenantAuth, tenantRoute } from '../../support/credentials.js';

export interface RunningIngester {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  configPath: string;
  port: number;
  stdout: () => string;
  resumeStdout: () => void;
  stderr: () => string;
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface StartOptions {
  /** Run under `ulimit -n N` (the soft limit on open files). */
  fdLimit?: number;
  /** Do not read the child's stdout (a stalled log reader); resume with resumeStdout(). */
  pauseStdout?: boolean;
  /** Wait for /readyz (default true). */
  waitReady?: boolean;
  /** Node flags before the script (e.g. the heap sizes of a pod's memory limit). */
  nodeArgs?: string[];
  /** Environment variables added to the test's own (e.g. the image's). */
  env?: Record<string, string>;
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
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = [
    ...(options.nodeArgs ?? []),
    join(ROOT, 'dist/cmd/intake.js'),
    'ingester',
    '--config',
    configPath,
    '--listen',
    `127.0.0.1:${port}`,
    '--admin-listen',
    `127.0.0.1:${adminPort}`,
  ];
  const env = { ...process.env, ...options.env };
  const child =
    options.fdLimit === undefined
      ? spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
      : spawn('/bin/sh', ['-c', `ulimit -n ${options.fdLimit} && exec "$0" "$@"`, process.execPath, ...args], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env,
        });
  let out = '';
  let err = '';
  const readStdout = (d: Buffer): void => void (out += d);
  if (options.pauseStdout) child.stdout?.pause();
  else child.stdout?.on('data', readStdout);
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await waitFor(
    'ingester ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`ingester exited: ${err}`);
      return options.waitReady === false
        ? (await fetch(`${adminUrl}/healthz`)).ok
        : (await fetch(`${adminUrl}/readyz`)).ok;
    },
    15_000,
    50,
  );
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    adminUrl,
    configPath,
    port,
    stdout: () => out,
    resumeStdout: () => void child.stdout?.on('data', readStdout).resume(),
    stderr: () => err,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
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
