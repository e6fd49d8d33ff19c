/**
 * What the chart gives teams' Destinations: the roles aggregated into admin/edit and view cover
 * them, the operator may watch them and write their status, and the ingesters (whose root
 * filesystem is read-only) have an in-memory /tmp for the credentials they write for the
 * outgoing clients.
 */
import { renderChart } from '../../support/helm.js';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}
interface Doc {
  kind: string;
  metadata: { name: string };
  rules?: Rule[];
  spec?: {
    template?: {
      spec?: {
        containers?: Array<{ name: string; volumeMounts?: Array<{ name: string; mountPath: string }> }>;
        volumes?: Array<{ name: string; emptyDir?: { medium?: string } }>;
      };
    };
  };
}

const docs = renderChart<Doc>('intake', 'intake', []);
const verbsOn = (role: string, resource: string): string[] =>
  docs
    .filter((d) => d.kind === 'ClusterRole' && d.metadata.name === role)
    .flatMap((d) => d.rules ?? [])
    .filter((r) => r.apiGroups.includes('intake.dev') && r.resources.includes(resource))
    .flatMap((r) => r.verbs);

describe("chart: teams' Destinations", () => {
  it('may be managed by the edit role, read by the view role, and watched by the operator', () => {
    expect(verbsOn('intake-edit', 'destinations')).toEqual(
      expect.arrayContaining(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']),
    );
    expect(verbsOn('intake-view', 'destinations').sort()).toEqual(['get', 'list', 'watch']);
    expect(verbsOn('intake-operator', 'destinations').sort()).toEqual(['get', 'list', 'watch']);
    expect(verbsOn('intake-operator', 'destinations/status').sort()).toEqual(['get', 'patch']);
  });

  it('give the ingesters an in-memory /tmp', () => {
    const ingester = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'intake-ingester');
    const pod = ingester?.spec?.template?.spec;
    const container = pod?.containers?.find((c) => c.name === 'ingester');
    expect(container?.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
    expect(pod?.volumes?.find((v) => v.name === 'tmp')?.emptyDir?.medium).toBe('Memory');
  });
});
