/**
 * Helpers for tests against the real test API server (`make testcluster`): kubectl as a user
 * would run it, a typed client for assertions, and the built operator and ingester as processes.
 * What needs no Kubernetes (paths, ports, waiting, credentials) is in test/support.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../../kube/config.js';
import { INTAKE, spawnIntake, untilAnswers, type IntakeProcess } from '../../support/intake-process.js';
import { ROOT } from '../../support/paths.js';
import { freePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';

// The cluster tests (test/node) take these from here too.
export { ROOT, waitFor };

export const KUBECONFIG = process.env.INTAKE_TEST_KUBECONFIG ?? resolve(ROOT, '.testcluster/kubeconfig');

export function requireCluster(): void {
  if (!existsSync(KUBECONFIG))
    throw new Error(`no test cluster: ${KUBECONFIG} is missing; run make testcluster (make test does)`);
}

let clients: { kc: KubeConfig; core: CoreV1Api; custom: CustomObjectsApi } | undefined;

/** The test cluster's kubeconfig and API clients (made once a test file). */
export function kubeClients(): { kc: KubeConfig; core: CoreV1Api; custom: CustomObjectsApi } {
  if (!clients) {
    const kc = loadKubeConfig(KUBECONFIG);
    clients = { kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
  }
  return clients;
}

/** A condition of a resource's status. */
export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** The Ready condition of the WebhookIntegration namespace/name, if it has one yet. */
export async function webhookReady(namespace: string, name: string): Promise<Condition | undefined> {
  const wi = (await kubeClients().custom.getNamespacedCustomObject({
    group: 'intake.dev',
    version: 'v1alpha1',
    namespace,
    plural: 'webhookintegrations',
    name,
  })) as { status?: { conditions?: Condition[] } };
  return wi.status?.conditions?.find((c) => c.type === 'Ready');
}

/** The Secret namespace/name, or undefined while there is none. */
export async function readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
  try {
    return await kubeClients().core.readNamespacedSecret({ namespace, name });
  } catch {
    return undefined;
  }
}

/** One key of a Secret's data, decoded ('' when missing). */
export const secretValue = (secret: V1Secret, key: string): string =>
  Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

export async function kubectl(
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolvePromise) => {
    const child = spawn('kubectl', ['--kubeconfig', KUBECONFIG, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolvePromise({ stdout, stderr, code: code ?? -1 }));
    child.stdin.end(input ?? '');
  });
}

export async function apply(yaml: string): Promise<void> {
  const r = await kubectl(['apply', '-f', '-'], yaml);
  if (r.code !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
}

export interface Proc extends IntakeProcess {
  url: string;
  adminUrl: string;
}

/** Starts the built CLI with `args` and waits until its admin listener on `adminPort` answers /healthz. */
async function startProcess(
  args: string[],
  adminPort: number,
  ingestPort?: number,
  env: NodeJS.ProcessEnv = {},
  nodeFlags: string[] = [],
): Promise<Proc> {
  const proc = spawnIntake(args, { env, nodeArgs: nodeFlags });
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await untilAnswers(proc, `${args[0]} healthz`, async () => (await fetch(`${adminUrl}/healthz`)).ok, 20_000, 100);
  return { ...proc, url: ingestPort ? `http://127.0.0.1:${ingestPort}` : '', adminUrl };
}

export async function startOperator(
  namespace: string,
  watch: string[],
  extra: string[] = [],
  env: NodeJS.ProcessEnv = {},
  nodeFlags: string[] = [],
): Promise<Proc> {
  const admin = await freePort();
  return startProcess(
    [
      'operator',
      '--kubeconfig',
      KUBECONFIG,
      '--namespace',
      namespace,
      '--watch-namespaces',
      watch.join(','),
      '--public-base-url',
      'https://intake.test',
      '--admin-listen',
      `127.0.0.1:${admin}`,
      '--log-level',
      'debug',
      ...extra,
    ],
    admin,
    undefined,
    env,
    nodeFlags,
  );
}

/**
 * The ingester in Kubernetes mode. Tests poll with credentials that are not published yet, which
 * the brute-force guard would (rightly) block, so its limit is raised here; e2e tests cover it.
 */
export async function startIngester(namespace: string, extra: string[] = []): Promise<Proc> {
  const [ingest, admin] = [await freePort(), await freePort()];
  const config = join(mkdtempSync(join(tmpdir(), 'intake-it-')), 'intake.yaml');
  writeFileSync(config, 'authThrottle: {failures: 1000000, window: 1m, block: 1s}\n');
  const proc = await startProcess(
    [
      'ingester',
      '--config',
      config,
      '--kubeconfig',
      KUBECONFIG,
      '--namespace',
      namespace,
      '--listen',
      `127.0.0.1:${ingest}`,
      '--admin-listen',
      `127.0.0.1:${admin}`,
      '--events-log',
      '/dev/null',
      ...extra,
    ],
    admin,
    ingest,
  );
  await waitFor('ingester ready', async () => (await fetch(`${proc.adminUrl}/readyz`)).ok, 20_000, 100);
  return proc;
}

/** A kubeconfig that authenticates as a ServiceAccount, with a token minted by TokenRequest. */
export async function kubeconfigFor(serviceAccount: string, namespace: string): Promise<string> {
  const r = await kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration=1h']);
  if (r.code !== 0) throw new Error(`kubectl create token ${serviceAccount}: ${r.stderr}`);
  const { kc } = kubeClients();
  const cluster = kc.getCurrentCluster();
  const path = join(mkdtempSync(join(tmpdir(), 'intake-sa-')), 'kubeconfig');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${cluster?.server}", certificate-authority-data: "${cluster?.caData}"}}]
users: [{name: sa, user: {token: "${r.stdout.trim()}"}}]
contexts: [{name: c, context: {cluster: c, user: sa}}]
current-context: c
`,
  );
  return path;
}

/** A one-shot command of the built CLI (dist/cmd/intake.js), run to its end. */
export function runIntake(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [INTAKE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

export const uniqueName = (prefix: string): string => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;

export async function createNamespace(name: string): Promise<void> {
  const r = await kubectl(['create', 'namespace', name]);
  if (r.code !== 0 && !r.stderr.includes('AlreadyExists')) throw new Error(r.stderr);
}

export async function applyCrds(): Promise<void> {
  const r = await kubectl(['apply', '--server-side', '-f', resolve(ROOT, 'crds')]);
  if (r.code !== 0) throw new Error(`applying CRDs failed: ${r.stderr}`);
  await kubectl([
    'wait',
    '--for=condition=Established',
    'crd/webhookintegrations.intake.dev',
    'crd/apikeys.intake.dev',
    'crd/intakequotas.intake.dev',
    'crd/destinations.intake.dev',
    '--timeout=30s',
  ]);
}

export async function postEvent(ingestUrl: string, name: string, authorization: string): Promise<number> {
  const res = await fetch(`${ingestUrl}/events/webhook_${name}`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ source: 'test-host', severity: 'critical' }),
  });
  await res.arrayBuffer();
  return res.status;
}
