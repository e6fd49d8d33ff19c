/**
 * The chart's Grafana dashboard ConfigMap (monitoring.grafanaDashboard): none by default; when
 * enabled, labelled for Grafana's dashboard sidecar (kube-prometheus-stack's grafana_dashboard "1"
 * unless changed), in the chosen namespace, holding the dashboard file unchanged. That every
 * panel's query returns data is test/e2e/grafana-dashboard.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../support/paths.js';

const HELM = resolve(ROOT, '.tools/bin/helm');

interface ConfigMap {
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations?: Record<string, string> };
  data: Record<string, string>;
}

function dashboards(...set: string[]): ConfigMap[] {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: run make tools`);
  const out = execFileSync(HELM, ['template', 'intake', resolve(ROOT, 'charts/intake'), '-n', 'intake', ...set], {
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  return parseAllDocuments(out)
    .map((d) => d.toJS() as ConfigMap | null)
    .filter((d): d is ConfigMap => d?.kind === 'ConfigMap' && d.metadata.name.endsWith('-dashboard'));
}

describe('chart: monitoring.grafanaDashboard', () => {
  it('renders no dashboard by default', () => {
    expect(dashboards()).toEqual([]);
  });

  it('renders the dashboard file as a ConfigMap labelled for the sidecar', () => {
    const [map, ...more] = dashboards('--set', 'monitoring.grafanaDashboard.enabled=true');
    expect(more).toEqual([]);
    expect(map?.metadata).toMatchObject({ name: 'intake-dashboard', namespace: 'intake' });
    expect(map?.metadata.labels).toMatchObject({ grafana_dashboard: '1', 'app.kubernetes.io/name': 'intake' });
    const file = readFileSync(resolve(ROOT, 'charts/intake/files/dashboards/intake.json'), 'utf8');
    expect(JSON.parse(map?.data['intake.json'] ?? '')).toEqual(JSON.parse(file));
  });

  it("follows the sidecar's settings: namespace, label, folder annotation", () => {
    const [map] = dashboards(
      ...['--set', 'monitoring.grafanaDashboard.enabled=true'],
      ...['--set', 'monitoring.grafanaDashboard.namespace=monitoring'],
      ...['--set', 'monitoring.grafanaDashboard.label=dashboards'],
      ...['--set', 'monitoring.grafanaDashboard.labelValue=intake'],
      ...['--set', 'monitoring.grafanaDashboard.annotations.grafana_folder=Intake'],
    );
    expect(map?.metadata.namespace).toBe('monitoring');
    expect(map?.metadata.labels).toMatchObject({ dashboards: 'intake' });
    expect(map?.metadata.labels).not.toHaveProperty('grafana_dashboard');
    expect(map?.metadata.annotations).toEqual({ grafana_folder: 'Intake' });
  });

  it('refuses an empty label (the sidecar would load nothing)', () => {
    const r = spawnSync(
      HELM,
      ['template', 'intake', resolve(ROOT, 'charts/intake'), '--set', 'monitoring.grafanaDashboard.label='],
      { encoding: 'utf8' },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('grafanaDashboard/label');
  });
});
