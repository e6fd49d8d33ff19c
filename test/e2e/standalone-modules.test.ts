/**
 * A standalone ingester (routes from its config file) loads neither the operator nor
 * @kubernetes/client-node: `intake` imports a component only when its command runs, which keeps
 * about 50 MiB of resident memory out of the standalone process (docs/benchmarks.md: "Memory").
 * A module hook preloaded with --import records every module the built ingester resolves.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../support/paths.js';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/waiting.js';
import { EXAMPLE } from './support/ingester.js';

const HOOK = `
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const resolved = new Set();
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); resolved.add(r.url); return r; } });
process.on('exit', () => writeFileSync(process.env.INTAKE_TEST_MODULES_FILE, JSON.stringify([...resolved])));
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'intake-modules-'));
  writeFileSync(join(dir, 'hook.mjs'), HOOK);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the built ingester on free ports with the hook, waits until ready, stops it; returns what it resolved. */
async function modulesOfStandaloneIngester(): Promise<string[]> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const modulesFile = join(dir, 'modules.json');
  const args = [
    '--import',
    pathToFileURL(join(dir, 'hook.mjs')).href,
    join(ROOT, 'dist/cmd/intake.js'),
    'ingester',
    '--config',
    EXAMPLE,
    '--listen',
    `127.0.0.1:${port}`,
    '--admin-listen',
    `127.0.0.1:${adminPort}`,
  ];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '', INTAKE_TEST_MODULES_FILE: modulesFile },
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((done) => child.once('exit', done));
  try {
    await waitFor(
      'ingester ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`ingester exited: ${stderr}`);
        return (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).ok;
      },
      15_000,
      50,
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return JSON.parse(readFileSync(modulesFile, 'utf8')) as string[];
}

/** Runs a command of the built `intake` to its end with the hook; returns what it resolved. */
async function modulesOfCommand(args: string[]): Promise<string[]> {
  const modulesFile = join(dir, 'command-modules.json');
  const child = spawn(
    process.execPath,
    ['--import', pathToFileURL(join(dir, 'hook.mjs')).href, join(ROOT, 'dist/cmd/intake.js'), ...args],
    {
      stdio: ['ignore', 'ignore', 'ignore'],
      env: { ...process.env, NODE_OPTIONS: '', INTAKE_TEST_MODULES_FILE: modulesFile },
    },
  );
  await new Promise((done) => child.once('exit', done));
  return JSON.parse(readFileSync(modulesFile, 'utf8')) as string[];
}

const components = (modules: string[]) =>
  modules.filter(
    (url) =>
      url.includes('/dist/ingester/') || url.includes('/dist/operator/') || url.includes('/@kubernetes/client-node/'),
  );

describe('the intake command', () => {
  it('loads no component for --help or for a dead-letter listing (an admin listener client)', async () => {
    expect(components(await modulesOfCommand(['--help']))).toEqual([]);
    // Nothing listens on port 9: the command fails after its imports, which is all this looks at.
    expect(components(await modulesOfCommand(['deadletter', 'list', '--admin-url', 'http://127.0.0.1:9']))).toEqual([]);
  });
});

describe('a standalone ingester', () => {
  it('loads the ingester but neither the operator nor @kubernetes/client-node', async () => {
    const modules = await modulesOfStandaloneIngester();
    expect(modules.some((url) => url.endsWith('/dist/ingester/main.js'))).toBe(true);
    expect(
      modules.filter(
        (url) =>
          url.includes('/@kubernetes/client-node/') || url.includes('/dist/operator/') || url.includes('/dist/kube/'),
      ),
    ).toEqual([]);
  });
});
