/**
 * The helm that `make tools` builds behaves like the released binary: it reports its version and
 * commit, and `.Capabilities.KubeVersion` is the Kubernetes version of its client libraries, not
 * the v1.20.0 fallback a plain `go install` leaves (which makes `helm template charts/intake`
 * fail: the chart requires Kubernetes >= 1.29).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../support/paths.js';

const HELM = join(ROOT, '.tools/bin/helm');

/** A `NAME := value` line of the Makefile: the pins the build used. */
function makeVariable(name: string): string {
  const line = readFileSync(join(ROOT, 'Makefile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name} :=`));
  if (!line) throw new Error(`Makefile has no ${name}`);
  return line.slice(line.indexOf(':=') + 2).trim();
}

/** helm with its own homes in a temp dir, so a developer's repositories and plugins play no part. */
function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(HELM, args, {
    encoding: 'utf8',
    env: { ...process.env, HELM_CACHE_HOME: tmp, HELM_CONFIG_HOME: tmp, HELM_DATA_HOME: tmp },
  });
}

function helm(args: string[]): string {
  const result = run(args);
  if (result.status !== 0) throw new Error(`helm ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'intake-helm-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the helm built by make tools', () => {
  it('reports the pinned release version, its commit and a clean tree', () => {
    const info = helm(['version', '--template', '{{ .Version }} {{ .GitCommit }} {{ .GitTreeState }}']);
    expect(info).toBe(`${makeVariable('HELM_VERSION')} ${makeVariable('HELM_GIT_COMMIT')} clean`);
  });

  it('offers the Kubernetes version of its client libraries as .Capabilities.KubeVersion', () => {
    const chart = join(tmp, 'capabilities');
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: capabilities\nversion: 0.1.0\n');
    writeFileSync(join(chart, 'templates', 'kube.yaml'), 'kubeVersion: {{ .Capabilities.KubeVersion.Version }}\n');
    const rendered = helm(['template', chart]);
    const version = /kubeVersion: v1\.(\d+)\.0/.exec(rendered);
    expect(version).not.toBeNull();
    // Not the v1.20.0 fallback: at least the 1.29 that charts/intake requires.
    expect(Number(version?.[1])).toBeGreaterThanOrEqual(29);
  });

  it('renders charts/intake with its defaults', () => {
    const result = run(['template', 'intake', join(ROOT, 'charts/intake')]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^kind: Deployment$/m);
  });
});
