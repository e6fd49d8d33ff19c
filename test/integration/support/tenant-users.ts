/**
 * A namespace's two console users, as a release of the chart gives them their roles: the service
 * accounts `viewer` (bound to the release's intake-view ClusterRole) and `editor` (intake-edit),
 * with a token each to sign in with (`intake console --auth token`).
 */
import { expect } from '@jest/globals';
import { stringify } from 'yaml';
import { renderChart } from '../../support/helm.js';
import { apply, kubectl } from './cluster.js';

/** A token of service account `sa` in `ns`, valid for an hour. */
export async function serviceAccountToken(sa: string, ns: string): Promise<string> {
  const r = await kubectl(['create', 'token', sa, '-n', ns, '--duration', '1h']);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

/** Applies the release's two tenant ClusterRoles and binds `viewer` and `editor` in `ns` to them. */
export async function viewerAndEditor(
  release: string,
  ns: string,
): Promise<{ viewerToken: string; editorToken: string }> {
  const roles = renderChart<{ kind: string; metadata: { name: string } }>(release, ns, []).filter(
    (d) => d.kind === 'ClusterRole' && /-intake-(view|edit)$/.test(d.metadata.name),
  );
  if (roles.length !== 2) throw new Error(`the chart rendered ${roles.length} tenant ClusterRoles, not 2`);
  await apply(roles.map((r) => stringify(r)).join('---\n'));
  const user = (sa: string, role: string) => `apiVersion: v1
kind: ServiceAccount
metadata: {name: ${sa}, namespace: ${ns}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ${sa}, namespace: ${ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${release}-intake-${role}}
subjects: [{kind: ServiceAccount, name: ${sa}, namespace: ${ns}}]
`;
  await apply(`${user('viewer', 'view')}---\n${user('editor', 'edit')}`);
  return { viewerToken: await serviceAccountToken('viewer', ns), editorToken: await serviceAccountToken('editor', ns) };
}

/** Deletes the release's two tenant ClusterRoles (a file's cleanup; they are cluster-wide). */
export async function deleteTenantRoles(release: string): Promise<void> {
  await kubectl(['delete', 'clusterrole', `${release}-intake-view`, `${release}-intake-edit`]);
}

/** Signs in to the console at `base` with a Kubernetes token; answers the session's headers for its API. */
export async function consoleSession(base: string, kubeToken: string): Promise<Record<string, string>> {
  const res = await fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: kubeToken }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { session: string };
  return { cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] as string, 'x-intake-session': body.session };
}
