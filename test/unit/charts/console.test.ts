/**
 * The chart's console (console.enabled) and the aggregated roles it relies on: the console's own
 * ServiceAccount has no rights and no token, so every Kubernetes call must use the user's token;
 * intake-view can read intake's resources but no Secret, so a viewer cannot reveal credentials.
 */
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  automountServiceAccountToken?: boolean;
  rules?: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  subjects?: Array<{ kind: string; name: string }>;
  spec?: {
    template: {
      spec: {
        serviceAccountName: string;
        automountServiceAccountToken?: boolean;
        containers: Array<{ args: string[] }>;
        volumes: Array<{ configMap?: { name: string } }>;
      };
    };
  };
}

const render = (...set: string[]): Doc[] => renderChart<Doc>('intake', 'intake', set);

describe('chart: console.enabled', () => {
  it('is off by default', () => {
    expect(render().filter((d) => d.metadata.name === 'intake-console')).toEqual([]);
  });

  it('runs the console in token mode with a ServiceAccount that has no token and no binding', () => {
    const docs = render('--set', 'console.enabled=true', '--set', 'console.allowedHosts={console.example.com}');
    const sa = docs.find((d) => d.kind === 'ServiceAccount' && d.metadata.name === 'intake-console');
    expect(sa?.automountServiceAccountToken).toBe(false);
    const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'intake-console');
    const pod = deployment?.spec?.template.spec;
    expect(pod?.serviceAccountName).toBe('intake-console');
    expect(pod?.automountServiceAccountToken).toBe(false);
    expect(pod?.volumes.map((v) => v.configMap?.name)).toEqual(['kube-root-ca.crt']);
    expect(pod?.containers[0]?.args).toEqual(
      expect.arrayContaining([
        'console',
        '--auth=token',
        '--listen=0.0.0.0:9090',
        '--ingest-url=http://intake-ingester.intake.svc:80',
        '--allowed-hosts=console.example.com',
        '--secure-cookie',
        '--mapping-workers=2',
      ]),
    );
    const bindings = docs.filter((d) => d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding');
    expect(bindings.length).toBeGreaterThan(0);
    for (const b of bindings) expect(b.subjects?.map((s) => s.name)).not.toContain('intake-console');
    expect(docs.find((d) => d.kind === 'Service' && d.metadata.name === 'intake-console')).toBeDefined();
  });
});

describe('chart: the intake-view and intake-edit ClusterRoles', () => {
  const roles = render().filter((d) => d.kind === 'ClusterRole');
  const role = (name: string) => roles.find((r) => r.metadata.name === name) as Doc;

  it('aggregate into the built-in view and edit roles', () => {
    expect(role('intake-view').metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view']).toBe('true');
    expect(role('intake-edit').metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit']).toBe('true');
  });

  it('intake-view reads intake resources only: no Secret, no write', () => {
    const rules = role('intake-view').rules ?? [];
    expect(rules.flatMap((r) => r.apiGroups)).toEqual(['intake.dev']);
    expect(rules.flatMap((r) => r.verbs).sort()).toEqual(['get', 'list', 'watch']);
  });

  it('intake-edit writes integrations and keys; Secrets stay with the built-in edit role', () => {
    const rules = role('intake-edit').rules ?? [];
    expect(rules.flatMap((r) => r.resources)).not.toContain('secrets');
    expect(rules.find((r) => r.resources.includes('webhookintegrations'))?.verbs).toEqual(
      expect.arrayContaining(['create', 'update', 'patch', 'delete']),
    );
  });

  it('lets editors read the event inspector (verb inspect), never viewers', () => {
    const inspects = (name: string) =>
      (role(name).rules ?? []).some((r) => r.resources.includes('webhookintegrations') && r.verbs.includes('inspect'));
    expect(inspects('intake-edit')).toBe(true);
    expect(inspects('intake-view')).toBe(false);
  });

  it("lets editors replay a namespace's dead letters (verb replay on destinations), never viewers", () => {
    const replays = (name: string) =>
      (role(name).rules ?? []).some((r) => r.resources.includes('destinations') && r.verbs.includes('replay'));
    expect(replays('intake-edit')).toBe(true);
    expect(replays('intake-view')).toBe(false);
  });
});

describe('chart: console.inspector', () => {
  const consoleArgs = (docs: Doc[]) =>
    docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'intake-console')?.spec?.template.spec.containers[0]
      ?.args ?? [];
  const adminFrom = (docs: Doc[]) =>
    JSON.stringify(docs.find((d) => d.kind === 'NetworkPolicy' && d.metadata.name === 'intake-ingester'));

  it("reads captures from the ingesters' admin Service, which admits the console's pods", () => {
    const docs = render('--set', 'console.enabled=true');
    expect(consoleArgs(docs)).toContain('--ingester-admin-url=http://intake-ingester-admin.intake.svc:8081');
    expect(adminFrom(docs)).toContain('"app.kubernetes.io/component":"console"');
  });

  it('off: no admin URL, and the admin port does not admit the console', () => {
    const docs = render('--set', 'console.enabled=true', '--set', 'console.inspector=false');
    expect(consoleArgs(docs).some((a) => a.startsWith('--ingester-admin-url'))).toBe(false);
    expect(adminFrom(docs)).not.toContain('"app.kubernetes.io/component":"console"');
    expect(adminFrom(render())).not.toContain('"app.kubernetes.io/component":"console"');
  });
});
