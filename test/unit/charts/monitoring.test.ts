/**
 * The chart's PrometheusRule (monitoring.prometheusRule.enabled): IntakeIntegrationSilent reads the
 * gauge the operator really exports (operator/metrics.ts), with the labels it really has; and, where
 * Debian's promtool is installed, the rendered rules pass `promtool check rules` and the alert fires
 * (and stays quiet) as `promtool test rules` expects.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { parseAllDocuments, stringify } from 'yaml';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { ROOT } from '../../support/paths.js';

const HELM = resolve(ROOT, '.tools/bin/helm');
const PROMTOOL = process.env.INTAKE_TEST_PROMTOOL ?? '/usr/bin/promtool';

interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface PrometheusRule {
  kind: 'PrometheusRule';
  spec: { groups: Array<{ name: string; rules: Rule[] }> };
}

function renderRules(...set: string[]): PrometheusRule {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: run make tools`);
  const out = execFileSync(
    HELM,
    [
      'template',
      'intake',
      resolve(ROOT, 'charts/intake'),
      '-n',
      'intake',
      ...['--set', 'monitoring.prometheusRule.enabled=true'],
      ...set,
    ],
    { encoding: 'utf8', maxBuffer: 16 << 20 },
  );
  const rules = parseAllDocuments(out)
    .map((d) => d.toJS() as { kind?: string } | null)
    .filter((d): d is PrometheusRule => d?.kind === 'PrometheusRule');
  expect(rules).toHaveLength(1);
  return rules[0] as PrometheusRule;
}

const silentRule = (rule: PrometheusRule): Rule => {
  const found = rule.spec.groups.flatMap((g) => g.rules).find((r) => r.alert === 'IntakeIntegrationSilent');
  if (!found) throw new Error('no IntakeIntegrationSilent rule');
  return found;
};

/** The operator's silent gauge, as it registers it: its name and label names. */
async function operatorSilentGauge(): Promise<{ name: string; labels: string[] }> {
  const registry = new Registry();
  const metrics = new OperatorMetrics(registry);
  metrics.integrationSilent.set({ namespace: 'team-a', name: 'quiet' }, 1);
  const json = await registry.getMetricsAsJSON();
  const gauge = json.find((m) => m.name === (metrics.integrationSilent as unknown as { name: string }).name);
  if (!gauge) throw new Error('the operator registers no silent gauge');
  return { name: gauge.name, labels: Object.keys(gauge.values[0]?.labels ?? {}).sort() };
}

describe('chart: monitoring.prometheusRule.enabled', () => {
  it('renders no PrometheusRule by default', () => {
    const out = execFileSync(HELM, ['template', 'intake', resolve(ROOT, 'charts/intake'), '-n', 'intake'], {
      encoding: 'utf8',
      maxBuffer: 16 << 20,
    });
    expect(out).not.toContain('kind: PrometheusRule');
  });

  it('IntakeIntegrationSilent reads the operator’s silent gauge, by the labels the gauge has', async () => {
    const gauge = await operatorSilentGauge();
    expect(gauge).toEqual({ name: 'intake_operator_integration_silent', labels: ['name', 'namespace'] });
    const rule = silentRule(renderRules());
    // The metric name, exactly (not a prefix of another), grouped by the labels the summary names.
    expect(rule.expr).toMatch(new RegExp(`\\b${gauge.name}\\b(?![_a-z])`));
    expect(rule.expr.replace(/\s+/g, ' ')).toBe(`max by (namespace, name) (${gauge.name}) == 1`);
    for (const label of gauge.labels) expect(rule.annotations?.summary).toContain(`$labels.${label}`);
    expect(rule.labels).toEqual({ severity: 'warning' });
  });

  const promtool = existsSync(PROMTOOL) ? it : it.skip;

  promtool('passes promtool check rules, and promtool test rules: fires for a silent integration only', () => {
    // Every optional rule too (destinations, remote write): the whole rendered file must load.
    const rule = renderRules(
      '--set',
      'destinations[0].name=tickets',
      '--set',
      'destinations[0].http.url=https://tickets.example.com/hooks',
      '--set',
      'ingester.remoteWrite.enabled=true',
      '--set',
      'ingester.remoteWrite.url=http://mimir.mimir:8080/api/v1/push',
    );
    const dir = mkdtempSync(join(tmpdir(), 'intake-rules-'));
    try {
      const rulesFile = join(dir, 'rules.yaml');
      writeFileSync(rulesFile, stringify({ groups: rule.spec.groups }));
      const check = spawnSync(PROMTOOL, ['check', 'rules', rulesFile], { encoding: 'utf8' });
      expect({ status: check.status, output: check.stdout + check.stderr }).toMatchObject({ status: 0 });

      const summary = silentRule(rule).annotations?.summary ?? '';
      const testFile = join(dir, 'test.yaml');
      writeFileSync(
        testFile,
        stringify({
          rule_files: [rulesFile],
          evaluation_interval: '15s',
          tests: [
            {
              interval: '15s',
              input_series: [
                {
                  series: 'intake_operator_integration_silent{namespace="team-a",name="quiet",pod="op-0"}',
                  values: '1x20',
                },
                {
                  series: 'intake_operator_integration_silent{namespace="team-a",name="busy",pod="op-0"}',
                  values: '0x20',
                },
                // A second operator pod (not the leader) reports nothing for it: max by keeps one alert.
                {
                  series: 'intake_operator_integration_silent{namespace="team-a",name="quiet",pod="op-1"}',
                  values: '0x20',
                },
              ],
              alert_rule_test: [
                // `for: 1m`: pending at 30 s, firing from 1 min on; the busy one never.
                { eval_time: '30s', alertname: 'IntakeIntegrationSilent', exp_alerts: [] },
                {
                  eval_time: '2m',
                  alertname: 'IntakeIntegrationSilent',
                  exp_alerts: [
                    {
                      exp_labels: { severity: 'warning', namespace: 'team-a', name: 'quiet' },
                      exp_annotations: {
                        summary: summary.replace('{{ $labels.namespace }}/{{ $labels.name }}', 'team-a/quiet'),
                        description: silentRule(rule).annotations?.description ?? '',
                      },
                    },
                  ],
                },
              ],
            },
          ],
        }),
      );
      const test = spawnSync(PROMTOOL, ['test', 'rules', testFile], { encoding: 'utf8' });
      expect({ status: test.status, output: test.stdout + test.stderr }).toMatchObject({ status: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
