/** What the console's pages derive from a resource (console/web/model.ts). */
import { execFileSync } from 'node:child_process';
import type { Resource } from '../../../console/web/api.js';
import { age, curlCommand, gitOpsOwner } from '../../../console/web/model.js';

const resource = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}): Resource => ({
  apiVersion: 'intake.dev/v1alpha1',
  kind: 'WebhookIntegration',
  metadata: { name: 'x', namespace: 'team', labels, annotations },
});

describe('gitOpsOwner', () => {
  it('recognises Argo CD by its instance label or tracking annotation', () => {
    expect(gitOpsOwner(resource({ 'argocd.argoproj.io/instance': 'payments' }))).toEqual({
      tool: 'Argo CD',
      owner: 'payments',
    });
    expect(
      gitOpsOwner(resource({}, { 'argocd.argoproj.io/tracking-id': 'payments:intake.dev/WebhookIntegration:team/x' })),
    ).toEqual({ tool: 'Argo CD', owner: 'payments' });
  });
  it('recognises Flux Kustomizations and HelmReleases', () => {
    expect(
      gitOpsOwner(
        resource({
          'kustomize.toolkit.fluxcd.io/name': 'apps',
          'kustomize.toolkit.fluxcd.io/namespace': 'flux-system',
        }),
      ),
    ).toEqual({ tool: 'Flux', owner: 'flux-system/apps' });
    expect(gitOpsOwner(resource({ 'helm.toolkit.fluxcd.io/name': 'intake-config' }))).toEqual({
      tool: 'Flux',
      owner: 'team/intake-config',
    });
  });
  it('leaves Helm and hand-made objects editable', () => {
    expect(gitOpsOwner(resource({ 'app.kubernetes.io/managed-by': 'Helm' }))).toBeUndefined();
    expect(gitOpsOwner(resource())).toBeUndefined();
  });
});

describe('age', () => {
  it('says how long ago, in the unit that reads best', () => {
    const now = Date.parse('2026-11-24T12:00:00Z');
    expect(age('2026-11-24T11:59:55Z', now)).toBe('5 s ago');
    expect(age('2026-11-24T11:30:00Z', now)).toBe('30 min ago');
    expect(age('2026-11-24T09:00:00Z', now)).toBe('3 h ago');
    expect(age('2026-11-20T12:00:00Z', now)).toBe('4 d ago');
    expect(age(undefined, now)).toBe('');
  });
});

describe('curlCommand', () => {
  // The shell itself reads the command back: each argument arrives intact, quotes and all.
  const argv = (command: string, env: Record<string, string> = {}): string[] =>
    JSON.parse(
      execFileSync(
        'sh',
        ['-c', `curl() { node -e 'console.log(JSON.stringify(process.argv.slice(1)))' -- "$@"; }; ${command}`],
        {
          env: { ...process.env, ...env },
          encoding: 'utf8',
        },
      ),
    ) as string[];

  it('quotes the payload and credentials so the shell passes them unchanged', () => {
    const payload = `{"description":"it's \\"down\\" $HOME \`id\`"}`;
    const args = argv(curlCommand('http://127.0.0.1:8080/events/webhook_x', 'x', "p'w$d", payload));
    expect(args).toEqual([
      '-sS',
      '-u',
      "x:p'w$d",
      '-H',
      'Content-Type: application/json',
      '--data-binary',
      payload,
      'http://127.0.0.1:8080/events/webhook_x',
    ]);
  });

  it('reads $PASSWORD when the secret may not be revealed', () => {
    const args = argv(curlCommand('http://h/events/webhook_x', 'x', undefined, '{}'), { PASSWORD: 'from-env' });
    expect(args[2]).toBe('x:from-env');
  });
});
