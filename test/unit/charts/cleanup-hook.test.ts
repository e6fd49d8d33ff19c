/**
 * The chart's uninstall cleanup hook as rendered: every object of it is a post-delete hook that
 * helm deletes when it finishes (succeeded or failed), the Job runs `intake operator cleanup` with
 * RBAC in the release namespace only (whatever operator.watchNamespaces says), and
 * cleanupOnUninstall=false renders none of it. Whether it works: test/integration/operator-cleanup.test.ts, test/node.
 */
import { renderChart } from '../../support/helm.js';

type Doc = {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: { template: { spec: { serviceAccountName: string; containers: Array<{ args: string[] }> } } };
};

const render = (args: string[]): Doc[] => renderChart<Doc>('rel', 'intake-system', args);
const hooks = (docs: Doc[]) => docs.filter((d) => d.metadata.annotations?.['helm.sh/hook']);

describe('the uninstall cleanup hook', () => {
  it('is post-delete hooks only, deleted by helm when done, with a Job running intake operator cleanup', () => {
    const docs = hooks(render([]));
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
      'Job/rel-intake-cleanup',
      'Role/rel-intake-cleanup',
      'RoleBinding/rel-intake-cleanup',
      'ServiceAccount/rel-intake-cleanup',
    ]);
    for (const d of docs) {
      expect(d.metadata.annotations?.['helm.sh/hook']).toBe('post-delete');
      expect(d.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe(
        'before-hook-creation,hook-succeeded,hook-failed',
      );
    }
    // Created before the Job that needs them.
    const weight = (kind: string) =>
      Number(docs.find((d) => d.kind === kind)?.metadata.annotations?.['helm.sh/hook-weight']);
    for (const kind of ['ServiceAccount', 'Role', 'RoleBinding']) expect(weight(kind)).toBeLessThan(weight('Job'));
    const job = docs.find((d) => d.kind === 'Job');
    expect(job?.spec?.template.spec.serviceAccountName).toBe('rel-intake-cleanup');
    expect(job?.spec?.template.spec.containers[0]?.args).toEqual([
      'operator',
      'cleanup',
      '--namespace=intake-system',
      '--lease-name=intake-operator',
      '--log-level=info',
    ]);
  });

  it("needs nothing in the operator's watched namespaces", () => {
    const docs = hooks(render(['--set', 'operator.watchNamespaces={team-a,team-b}']));
    expect(docs.map((d) => `${d.kind}/${d.metadata.namespace ?? ''}`).sort()).toEqual([
      'Job/intake-system',
      'Role/intake-system',
      'RoleBinding/intake-system',
      'ServiceAccount/intake-system',
    ]);
  });

  it('is not rendered with cleanupOnUninstall=false', () => {
    const docs = render(['--set', 'cleanupOnUninstall=false']);
    expect(hooks(docs)).toEqual([]);
    expect(docs.filter((d) => d.metadata.name.endsWith('-cleanup'))).toEqual([]);
  });
});
