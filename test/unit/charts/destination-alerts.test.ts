/**
 * The chart's alerts per destination (monitoring.prometheusRule.destinations): rendered with the
 * thresholds of the values, left out by name, each reading a metric the ingester really exports
 * (the auto-pause gauge by its agreed name), each linking a runbook entry that exists in
 * docs/operations.md; and, where promtool is installed, the rules pass `promtool check rules` and
 * fire as `promtool test rules` expects (a dead-letter counter's first burst included).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { DestinationMetrics } from '../../../ingester/destinations/metrics.js';
import { renderChart } from '../../support/helm.js';
import { ROOT } from '../../support/paths.js';

const PROMTOOL = process.env.INTAKE_TEST_PROMTOOL ?? '/usr/bin/promtool';

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface Doc {
  kind: string;
  spec: { groups: Array<{ name: string; rules: Rule[] }> };
}

const ALERTS = [
  'IntakeDestinationCircuitOpen',
  'IntakeDestinationBacklogOld',
  'IntakeDestinationDeadLettersGrowing',
  'IntakeDestinationAutoPaused',
];

function destinationRules(...set: string[]): Rule[] {
  const docs = renderChart<Doc>('intake', 'intake', ['--set', 'monitoring.prometheusRule.enabled=true', ...set]);
  const rule = docs.find((d) => d.kind === 'PrometheusRule');
  return rule?.spec.groups.find((g) => g.name === 'intake-destinations')?.rules ?? [];
}

const byName = (rules: Rule[], name: string): Rule => {
  const found = rules.find((r) => r.alert === name);
  if (!found) throw new Error(`no ${name}`);
  return found;
};

describe('chart: alerts per destination', () => {
  it('renders the four with the defaults, without any destination in the values (teams add theirs)', () => {
    const rules = destinationRules();
    expect(rules.map((r) => r.alert)).toEqual(ALERTS);
    expect(byName(rules, 'IntakeDestinationCircuitOpen')).toMatchObject({ for: '5m', labels: { severity: 'warning' } });
    expect(byName(rules, 'IntakeDestinationBacklogOld').expr).toBe(
      'max by (destination) (intake_destination_oldest_pending_seconds) > 900',
    );
    expect(byName(rules, 'IntakeDestinationDeadLettersGrowing').expr).toContain(
      'increase(intake_destination_dead_lettered_total[15m])) > 10',
    );
    expect(byName(rules, 'IntakeDestinationAutoPaused')).toMatchObject({
      expr: 'max by (destination) (intake_destination_paused{reason="auto"}) == 1',
      labels: { severity: 'critical' },
    });
  });

  it('takes its thresholds, severities, extra labels, runbook URL and the alerts left out from the values', () => {
    const rules = destinationRules(
      ...['--set', 'monitoring.prometheusRule.destinations.backlogOld.olderThan=1h30m'],
      ...['--set', 'monitoring.prometheusRule.destinations.backlogOld.for=10m'],
      ...['--set', 'monitoring.prometheusRule.destinations.deadLettersGrowing.window=1h'],
      ...['--set', 'monitoring.prometheusRule.destinations.deadLettersGrowing.moreThan=100'],
      ...['--set', 'monitoring.prometheusRule.destinations.circuitOpen.severity=critical'],
      ...['--set', 'monitoring.prometheusRule.additionalRuleLabels.team=platform'],
      ...['--set', 'monitoring.prometheusRule.runbookUrl=https://docs.example.com/operations.md'],
      ...['--set', 'monitoring.prometheusRule.disabled.IntakeDestinationAutoPaused=true'],
    );
    expect(rules.map((r) => r.alert)).toEqual(ALERTS.slice(0, 3));
    const backlog = byName(rules, 'IntakeDestinationBacklogOld');
    expect(backlog.expr).toMatch(/ > 5400$/);
    expect(backlog.for).toBe('10m');
    expect(backlog.annotations.summary).toContain('older than 1h30m');
    const dead = byName(rules, 'IntakeDestinationDeadLettersGrowing');
    expect(dead.expr).toContain('[1h])) > 100');
    expect(dead.expr).toContain('offset 1h');
    expect(byName(rules, 'IntakeDestinationCircuitOpen').labels).toEqual({ severity: 'critical', team: 'platform' });
    expect(backlog.annotations.runbook_url).toBe('https://docs.example.com/operations.md#intakedestinationbacklogold');
  });

  it('has one dead-letter alert, the per-destination one, also with destinations in the values', () => {
    const docs = renderChart<Doc>('intake', 'intake', [
      ...['--set', 'monitoring.prometheusRule.enabled=true'],
      ...['-f', join(ROOT, 'test/integration/fixtures/destinations.yaml')],
    ]);
    const groups = docs.find((d) => d.kind === 'PrometheusRule')?.spec.groups ?? [];
    const readingDeadLetters = groups
      .flatMap((g) => g.rules)
      .filter((r) => r.expr.includes('intake_destination_dead_lettered_total'))
      .map((r) => r.alert);
    expect(readingDeadLetters).toEqual(['IntakeDestinationDeadLettersGrowing']);
    // The platform's own group still has its lag alert.
    expect(groups.flatMap((g) => g.rules).map((r) => r.alert)).toContain('IntakeDestinationLagGrowing');
  });

  it('refuses a threshold that is no duration', () => {
    expect(() =>
      destinationRules('--set', 'monitoring.prometheusRule.destinations.backlogOld.olderThan=15 minutes'),
    ).toThrow(/olderThan/);
  });

  it('reads metrics the ingester exports, by the labels they have; the auto-pause gauge by its agreed name', async () => {
    const registry = new Registry();
    const metrics = new DestinationMetrics(registry);
    metrics.circuitState.set({ destination: 'd' }, 2);
    metrics.oldestPending.set({ destination: 'd' }, 1);
    metrics.deadLettered.inc({ destination: 'd', reason: 'http_400' });
    const exported = new Map(
      (await registry.getMetricsAsJSON())
        .filter((m) => m.values.length > 0)
        .map((m) => [m.name, Object.keys(m.values[0]?.labels ?? {})]),
    );
    const rules = destinationRules();
    for (const [alert, metric] of [
      ['IntakeDestinationCircuitOpen', 'intake_destination_circuit_state'],
      ['IntakeDestinationBacklogOld', 'intake_destination_oldest_pending_seconds'],
      ['IntakeDestinationDeadLettersGrowing', 'intake_destination_dead_lettered_total'],
    ] as const) {
      expect({ alert, labels: exported.get(metric) }).toEqual({
        alert,
        labels: expect.arrayContaining(['destination']),
      });
      expect(byName(rules, alert).expr).toMatch(new RegExp(`\\b${metric}\\b(?![_a-z])`));
    }
    // Exported by the pause work: intake_destination_paused{destination,reason} (reason suspended or auto).
    expect(byName(rules, 'IntakeDestinationAutoPaused').expr).toContain('intake_destination_paused{reason="auto"}');
  });

  it('links each alert to its runbook entry in docs/operations.md', () => {
    const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const anchors = new Set(
      [...doc.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        (m[1] as string)
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const rule of destinationRules()) {
      const anchor = rule.annotations.runbook_url?.split('#')[1] ?? '';
      expect({ alert: rule.alert, anchor, found: anchors.has(anchor) }).toEqual({
        alert: rule.alert,
        anchor,
        found: true,
      });
    }
  });

  const promtool = existsSync(PROMTOOL) ? it : it.skip;

  promtool('passes promtool check rules, and each alert fires (and stays quiet) as promtool test rules expects', () => {
    const rules = destinationRules();
    const dir = mkdtempSync(join(tmpdir(), 'intake-destination-rules-'));
    try {
      const rulesFile = join(dir, 'rules.yaml');
      writeFileSync(rulesFile, stringify({ groups: [{ name: 'intake-destinations', rules }] }));
      const check = spawnSync(PROMTOOL, ['check', 'rules', rulesFile], { encoding: 'utf8' });
      expect({ status: check.status, output: check.stdout + check.stderr }).toMatchObject({ status: 0 });
      const firing = (alertname: string, destination: string, severity = 'warning') => ({
        alertname,
        exp_alerts: [
          {
            exp_labels: { severity, destination },
            exp_annotations: Object.fromEntries(
              Object.entries(byName(rules, alertname).annotations).map(([k, v]) => [
                k,
                v.replace('{{ $labels.destination }}', destination),
              ]),
            ),
          },
        ],
      });
      const test = {
        rule_files: [rulesFile],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              // a: open (2) and half-open (1) for 10 minutes; b: closed.
              {
                series: 'intake_destination_circuit_state{destination="a",pod="p0"}',
                values: '0 2 2 1 2 2 1 2 2 2 2 2',
              },
              { series: 'intake_destination_circuit_state{destination="b",pod="p0"}', values: '0x11' },
              // a: the oldest waiting event ages a minute a minute; b: delivered as it comes.
              { series: 'intake_destination_oldest_pending_seconds{destination="a",pod="p0"}', values: '0+60x30' },
              { series: 'intake_destination_oldest_pending_seconds{destination="b",pod="p0"}', values: '0x30' },
              // a: 2 a minute; b: 1 in 15 minutes; c: a series born with a burst of 50.
              {
                series: 'intake_destination_dead_lettered_total{destination="a",reason="http_400",pod="p0"}',
                values: '0+2x30',
              },
              {
                series: 'intake_destination_dead_lettered_total{destination="b",reason="http_400",pod="p0"}',
                values: '0x10 1x20',
              },
              {
                series: 'intake_destination_dead_lettered_total{destination="c",reason="http_400",pod="p0"}',
                values: '_x20 50x10',
              },
              { series: 'intake_destination_paused{destination="a",reason="auto",pod="p0"}', values: '0x3 1x10' },
              { series: 'intake_destination_paused{destination="b",reason="suspended",pod="p0"}', values: '1x13' },
            ],
            alert_rule_test: [
              { eval_time: '3m', alertname: 'IntakeDestinationCircuitOpen', exp_alerts: [] },
              { eval_time: '10m', ...firing('IntakeDestinationCircuitOpen', 'a') },
              // Older than 15 minutes from 16 min on, for 5 minutes: firing at 21 min.
              { eval_time: '18m', alertname: 'IntakeDestinationBacklogOld', exp_alerts: [] },
              { eval_time: '22m', ...firing('IntakeDestinationBacklogOld', 'a') },
              { eval_time: '4m', alertname: 'IntakeDestinationDeadLettersGrowing', exp_alerts: [] },
              { eval_time: '12m', ...firing('IntakeDestinationDeadLettersGrowing', 'a') },
              {
                eval_time: '27m',
                alertname: 'IntakeDestinationDeadLettersGrowing',
                exp_alerts: [
                  firing('IntakeDestinationDeadLettersGrowing', 'a').exp_alerts[0],
                  firing('IntakeDestinationDeadLettersGrowing', 'c').exp_alerts[0],
                ],
              },
              // Paused by hand (suspended) is no alert; paused automatically is, at once.
              { eval_time: '2m', alertname: 'IntakeDestinationAutoPaused', exp_alerts: [] },
              { eval_time: '5m', ...firing('IntakeDestinationAutoPaused', 'a', 'critical') },
            ],
          },
        ],
      };
      const testFile = join(dir, 'test.yaml');
      writeFileSync(testFile, stringify(test));
      const run = spawnSync(PROMTOOL, ['test', 'rules', testFile], { encoding: 'utf8' });
      expect({ status: run.status, output: run.stdout + run.stderr }).toMatchObject({ status: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
