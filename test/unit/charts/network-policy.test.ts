/**
 * Who reaches the ingesters' admin port, as the chart renders it with the real helm: by default a
 * NetworkPolicy leaves the ingest port open and admits to the admin port only the operator's pods
 * and the monitoring namespace (the kubelet's probes come from the node, which a NetworkPolicy
 * always admits); its selectors match the pods the chart really runs; the ingester's config names
 * the admin Service's DNS names for the Host check, and the ingester accepts it.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { resolveSettings } from '../../../ingester/config.js';
import { HELM, renderChart } from '../../support/helm.js';
import { ROOT } from '../../support/paths.js';

type Labels = Record<string, string>;
interface Peer {
  podSelector?: { matchLabels?: Labels };
  namespaceSelector?: { matchLabels?: Labels };
  ipBlock?: { cidr: string };
}
interface Rule {
  from?: Peer[];
  ports?: Array<{ port: string | number; protocol: string }>;
}
interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels };
  spec?: {
    podSelector?: { matchLabels: Labels };
    policyTypes?: string[];
    ingress?: Rule[];
    selector?: Labels | { matchLabels: Labels };
    ports?: Array<{ name: string; targetPort: string }>;
    template?: {
      metadata: { labels: Labels };
      spec: {
        containers: Array<{
          name: string;
          ports?: Array<{ name: string; containerPort: number }>;
          startupProbe?: { httpGet?: { port: string } };
          livenessProbe?: { httpGet?: { port: string } };
          readinessProbe?: { httpGet?: { port: string } };
        }>;
      };
    };
  };
  data?: Record<string, string>;
}

const render = (...set: string[]): Obj[] => renderChart<Obj>('r', 'intake', set);
const policies = (objs: Obj[]): Obj[] => objs.filter((o) => o.kind === 'NetworkPolicy');
const matches = (selector: Labels, labels: Labels): boolean =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);
const component = (objs: Obj[], kind: string, name: string): Obj => {
  const found = objs.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
};
const adminRule = (policy: Obj): Rule => {
  const rules = (policy.spec?.ingress ?? []).filter((r) => r.ports?.some((p) => p.port === 'admin'));
  expect(rules).toHaveLength(1);
  return rules[0] as Rule;
};

describe('chart: the admin port behind a NetworkPolicy', () => {
  const objs = render();
  const policy = component(objs, 'NetworkPolicy', 'r-intake-ingester');
  const ingester = component(objs, 'Deployment', 'r-intake-ingester');
  const operator = component(objs, 'Deployment', 'r-intake-operator');

  it('renders one by default, selecting the ingester pods, for ingress', () => {
    expect(policies(objs).map((p) => p.metadata.name)).toEqual(['r-intake-ingester', 'r-intake-operator']);
    expect(policy?.metadata.namespace).toBe('intake');
    expect(policy?.spec?.policyTypes).toEqual(['Ingress']);
    expect(matches(policy?.spec?.podSelector?.matchLabels ?? {}, ingester.spec?.template?.metadata.labels ?? {})).toBe(
      true,
    );
    expect(matches(policy?.spec?.podSelector?.matchLabels ?? {}, operator.spec?.template?.metadata.labels ?? {})).toBe(
      false,
    );
  });

  it('leaves the ingest port open to all and admits nothing else anywhere but by a rule naming a port', () => {
    const rules = policy?.spec?.ingress ?? [];
    expect(rules).toHaveLength(2);
    expect(rules.every((r) => (r.ports?.length ?? 0) > 0)).toBe(true);
    const ingest = rules.find((r) => r.ports?.some((p) => p.port === 'ingest'));
    expect(ingest).toEqual({ ports: [{ port: 'ingest', protocol: 'TCP' }] });
    // The names the policy uses are the container's port names.
    const ports = ingester.spec?.template?.spec.containers[0]?.ports?.map((p) => p.name);
    expect(ports).toEqual(expect.arrayContaining(['ingest', 'admin']));
  });

  it('admits to the admin port only the operator’s pods and the monitoring namespace', () => {
    const rule = adminRule(policy as Obj);
    expect(rule.ports).toEqual([{ port: 'admin', protocol: 'TCP' }]);
    expect(rule.from).toHaveLength(2);
    const [fromOperator, fromMonitoring] = rule.from as Peer[];
    // Same namespace as the policy (no namespaceSelector), and only the operator's pods.
    expect(fromOperator?.namespaceSelector).toBeUndefined();
    const selector = fromOperator?.podSelector?.matchLabels ?? {};
    expect(matches(selector, operator.spec?.template?.metadata.labels ?? {})).toBe(true);
    expect(matches(selector, ingester.spec?.template?.metadata.labels ?? {})).toBe(false);
    expect(fromMonitoring).toEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
    });
    // No ipBlock and no empty selector: nothing admits "everyone".
    for (const peer of rule.from as Peer[]) {
      expect(peer.ipBlock).toBeUndefined();
      for (const s of [peer.podSelector, peer.namespaceSelector]) if (s) expect(s.matchLabels).not.toEqual({});
    }
  });

  it('probes the admin port by HTTP from the kubelet (the node, which every NetworkPolicy admits)', () => {
    const c = ingester.spec?.template?.spec.containers[0];
    for (const probe of [c?.startupProbe, c?.livenessProbe, c?.readinessProbe])
      expect(probe?.httpGet?.port).toBe('admin');
  });

  it('narrows the monitoring namespace to labelled pods, adds adminFrom, admits no monitoring with ""', () => {
    const narrowed = adminRule(
      policies(
        render(
          '--set',
          'networkPolicy.monitoringNamespace=observability',
          '--set',
          'networkPolicy.monitoringPodLabels.app\\.kubernetes\\.io/name=prometheus',
          '--set-json',
          'networkPolicy.adminFrom=[{"namespaceSelector":{"matchLabels":{"team":"sre"}},"podSelector":{"matchLabels":{"app":"toolbox"}}}]',
        ),
      )[0] as Obj,
    );
    expect(narrowed.from?.slice(1)).toEqual([
      {
        // One peer, both selectors: only those pods in that namespace (not either).
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
      { namespaceSelector: { matchLabels: { team: 'sre' } }, podSelector: { matchLabels: { app: 'toolbox' } } },
    ]);
    const none = adminRule(policies(render('--set', 'networkPolicy.monitoringNamespace='))[0] as Obj);
    expect(none.from).toHaveLength(1);
  });

  it('renders none when turned off', () => {
    expect(policies(render('--set', 'networkPolicy.enabled=false'))).toEqual([]);
  });
});

describe('chart: the operator’s admin port behind a NetworkPolicy', () => {
  const operatorPolicy = (objs: Obj[]): Obj => component(objs, 'NetworkPolicy', 'r-intake-operator');
  const objs = render();
  const policy = operatorPolicy(objs);
  const ingester = component(objs, 'Deployment', 'r-intake-ingester');
  const operator = component(objs, 'Deployment', 'r-intake-operator');

  it('selects the operator pods only, for ingress', () => {
    expect(policy.metadata.namespace).toBe('intake');
    expect(policy.spec?.policyTypes).toEqual(['Ingress']);
    const selector = policy.spec?.podSelector?.matchLabels ?? {};
    expect(matches(selector, operator.spec?.template?.metadata.labels ?? {})).toBe(true);
    expect(matches(selector, ingester.spec?.template?.metadata.labels ?? {})).toBe(false);
    // The operator's only port is the admin port, probed by HTTP from the kubelet (the node).
    const c = operator.spec?.template?.spec.containers[0];
    expect(c?.ports?.map((p) => p.name)).toEqual(['admin']);
    for (const probe of [c?.startupProbe, c?.livenessProbe, c?.readinessProbe])
      if (probe) expect(probe.httpGet?.port).toBe('admin');
  });

  it('admits to the admin port only the monitoring namespace, never the ingesters or everyone', () => {
    expect(policy.spec?.ingress).toHaveLength(1);
    const rule = adminRule(policy);
    expect(rule.ports).toEqual([{ port: 'admin', protocol: 'TCP' }]);
    expect(rule.from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ]);
  });

  it('follows monitoringPodLabels and adminFrom as the ingesters’ policy does', () => {
    const rule = adminRule(
      operatorPolicy(
        render(
          '--set',
          'networkPolicy.monitoringPodLabels.app\\.kubernetes\\.io/name=prometheus',
          '--set-json',
          'networkPolicy.adminFrom=[{"namespaceSelector":{"matchLabels":{"team":"sre"}}}]',
        ),
      ),
    );
    expect(rule.from).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
      { namespaceSelector: { matchLabels: { team: 'sre' } } },
    ]);
  });

  it('admits nothing (no rule, not an empty "from" that would admit everyone) with no monitoring and no adminFrom', () => {
    const closed = operatorPolicy(render('--set', 'networkPolicy.monitoringNamespace='));
    expect(closed.spec?.ingress).toEqual([]);
  });

  it('renders none when turned off', () => {
    expect(policies(render('--set', 'networkPolicy.enabled=false'))).toEqual([]);
  });
});

describe('chart: the admin port’s Host check', () => {
  const configOf = (objs: Obj[]): Record<string, unknown> =>
    parse(component(objs, 'ConfigMap', 'r-intake-ingester').data?.['intake.yaml'] ?? '') as Record<string, unknown>;

  it('names the admin Service’s DNS names, which the ingester accepts', () => {
    const objs = render('--set', 'ingester.adminAllowedHosts={admin.intake.example}');
    const service = component(objs, 'Service', 'r-intake-ingester-admin');
    expect(service.spec?.ports?.map((p) => p.targetPort)).toEqual(['admin']);
    const config = configOf(objs);
    expect(config.adminAllowedHosts).toEqual([
      'r-intake-ingester-admin',
      'r-intake-ingester-admin.intake',
      'r-intake-ingester-admin.intake.svc',
      'r-intake-ingester-admin.intake.svc.cluster.local',
      'admin.intake.example',
    ]);
    expect(resolveSettings(config, {}).adminAllowedHosts).toHaveLength(5);
  });

  it('refuses a port or a pattern in ingester.adminAllowedHosts', () => {
    for (const bad of ['admin:8081', '*.intake.example']) {
      let message = '';
      try {
        execFileSync(
          HELM,
          ['template', 'r', resolve(ROOT, 'charts/intake'), '--set', `ingester.adminAllowedHosts={${bad}}`],
          {
            encoding: 'utf8',
            stdio: 'pipe',
          },
        );
      } catch (err) {
        message = String((err as { stderr?: string }).stderr);
      }
      expect(message).toContain('adminAllowedHosts');
    }
  });
});
