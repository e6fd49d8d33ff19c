/**
 * What the operator tests on the test API server share before their first test and after their
 * last: fresh namespaces (the operator's own and one for each tenant), the CRDs applied, the
 * clients, and the operator and ingesters a file starts, stopped and the namespaces deleted at the
 * end whatever happened.
 */
import { afterAll, beforeAll } from '@jest/globals';
import {
  applyCrds,
  createNamespace,
  kubeClients,
  kubectl,
  requireCluster,
  startIngester,
  startOperator,
  uniqueName,
  type Proc,
} from './cluster.js';

export interface OperatorSuite<Tenants extends string[]> extends ReturnType<typeof kubeClients> {
  /** The operator's namespace, where it writes route Secrets and the ingesters read them. */
  system: string;
  /** One namespace per tenant prefix, in the order given. */
  tenants: { [K in keyof Tenants]: string };
  /** The operator watching every tenant namespace; stopped after the file's last test. */
  startOperator: (extra?: string[], env?: NodeJS.ProcessEnv) => Promise<Proc>;
  /** An ingester in Kubernetes mode reading the operator's namespace; stopped after the operator. */
  startIngester: (extra?: string[]) => Promise<Proc>;
}

/**
 * Registers the file's beforeAll (namespaces, CRDs) and afterAll (stop, delete); call it at the
 * top of a test file, before the file's own hooks, which then run after these.
 */
export function operatorSuite<const Tenants extends string[]>(...tenantPrefixes: Tenants): OperatorSuite<Tenants> {
  const system = uniqueName('intake-system');
  const tenants = tenantPrefixes.map(uniqueName) as { [K in keyof Tenants]: string };
  const operators: Proc[] = [];
  const ingesters: Proc[] = [];
  beforeAll(async () => {
    requireCluster();
    await applyCrds();
    for (const ns of [system, ...tenants]) await createNamespace(ns);
  });
  afterAll(async () => {
    for (const p of [...operators, ...ingesters]) await p.stop();
    await kubectl(['delete', 'namespace', ...tenants, system, '--wait=false']);
  });
  return {
    system,
    tenants,
    ...kubeClients(),
    startOperator: async (extra = [], env = {}) => {
      const p = await startOperator(system, tenants, extra, env);
      operators.push(p);
      return p;
    },
    startIngester: async (extra = []) => {
      const p = await startIngester(system, extra);
      ingesters.push(p);
      return p;
    },
  };
}
