/**
 * A standalone ingester (routes from its config file) loads neither the operator nor
 * @kubernetes/client-node: `intake` imports a component only when its command runs, which keeps
 * about 50 MiB of resident memory out of the standalone process (docs/benchmarks.md: "Memory").
 * Nor Node's bundled undici, which an ESM import of node:http loads (common/node-http.ts).
 * A module hook preloaded with --import records every module the built ingester resolves, and
 * Node's own modules it loaded (process.moduleLoadList).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { INTAKE } from '../support/intake-process.js';
import { basic, DEMO, post, startIngester } from './support/ingester.js';

const HOOK = `
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const resolved = new Set();
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); resolved.add(r.url); return r; } });
process.on('exit', () => {
  writeFileSync(process.env.INTAKE_TEST_MODULES_FILE, JSON.stringify([...resolved]));
  writeFileSync(process.env.INTAKE_TEST_MODULES_FILE + '.builtins', JSON.stringify(process.moduleLoadList));
});
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'intake-modules-'));
  writeFileSync(join(dir, 'hook.mjs'), HOOK);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Starts the built ingester on free ports with the hook, waits until ready, sends it one event,
 * stops it; returns what it resolved and Node's own modules it loaded.
 */
async function modulesOfStandaloneIngester(
  edit: (config: Record<string, unknown>) => void = () => {},
  send: (url: string) => Promise<void> = async () => {},
): Promise<{ modules: string[]; builtins: string[] }> {
  const modulesFile = join(dir, 'modules.json');
  const ing = await startIngester(edit, {
    nodeArgs: ['--import', pathToFileURL(join(dir, 'hook.mjs')).href],
    env: { NODE_OPTIONS: '', INTAKE_TEST_MODULES_FILE: modulesFile },
  });
  try {
    const sent = await post(
      `${ing.url}/events/webhook_demo`,
      { source: 'host-1', severity: 'critical', class: 'cpu', type: 'high' },
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    expect(sent.status).toBe(200);
    await send(ing.url);
  } finally {
    await ing.stop();
  }
  return {
    modules: JSON.parse(readFileSync(modulesFile, 'utf8')) as string[],
    builtins: JSON.parse(readFileSync(`${modulesFile}.builtins`, 'utf8')) as string[],
  };
}

/** Runs a command of the built `intake` to its end with the hook; returns what it resolved. */
async function modulesOfCommand(args: string[]): Promise<string[]> {
  const modulesFile = join(dir, 'command-modules.json');
  const child = spawn(process.execPath, ['--import', pathToFileURL(join(dir, 'hook.mjs')).href, INTAKE, ...args], {
    stdio: ['ignore', 'ignore', 'ignore'],
    env: { ...process.env, NODE_OPTIONS: '', INTAKE_TEST_MODULES_FILE: modulesFile },
  });
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
  it("loads the ingester but neither the operator, @kubernetes/client-node nor Node's bundled undici", async () => {
    const { modules, builtins } = await modulesOfStandaloneIngester();
    expect(builtins).toContain('NativeModule http');
    expect(builtins.filter((m) => m.includes('undici'))).toEqual([]);
    expect(modules.some((url) => url.endsWith('/dist/ingester/main.js'))).toBe(true);
    expect(
      modules.filter(
        (url) =>
          url.includes('/@kubernetes/client-node/') || url.includes('/dist/operator/') || url.includes('/dist/kube/'),
      ),
    ).toEqual([]);
  });
});

/** A package of node_modules among the resolved URLs. */
const loadsPackage = (modules: string[], name: string): boolean =>
  modules.some((url) => url.includes(`/node_modules/${name}/`));

describe('optional parts of a standalone ingester, loaded only when used', () => {
  it('loads neither JSONata nor the mapping engine while no route maps, nor the yaml package for a plain config file', async () => {
    const { modules } = await modulesOfStandaloneIngester();
    expect(modules.filter((url) => url.endsWith('/dist/api/mapping/engine.js'))).toEqual([]);
    expect(loadsPackage(modules, 'jsonata')).toBe(false);
    expect(loadsPackage(modules, 'yaml')).toBe(false);
  });

  it('loads the mapping engine for a mapped route, which maps its first request', async () => {
    const { modules } = await modulesOfStandaloneIngester(
      (config) => {
        (config.routes as unknown[]).push({
          apiVersion: 'intake.dev/v1alpha1',
          kind: 'WebhookIntegration',
          name: 'mapped',
          namespace: 'default',
          credentials: [{ username: 'mapper', secret: { plain: 'mapper-password' } }],
          mapping: { expression: '{"source": host, "severity": 3, "class": "cpu", "type": "high"}' },
        });
      },
      async (url) => {
        const sent = await post(
          `${url}/events/webhook_mapped`,
          { host: 'host-2' },
          { authorization: basic('mapper', 'mapper-password') },
        );
        expect(sent.status).toBe(200);
      },
    );
    expect(modules.some((url) => url.endsWith('/dist/api/mapping/engine.js'))).toBe(true);
    expect(loadsPackage(modules, 'jsonata')).toBe(true);
  });
});
