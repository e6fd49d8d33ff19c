/**
 * The chart's alerts per destination, evaluated by a real Prometheus scraping a real ingester: the
 * rules rendered by `helm template` (with short thresholds and `for`), loaded as a rule file, with
 * one destination whose receiver answers 500 (its circuit opens, its backlog ages) and one whose
 * receiver refuses with 400 (its dead letters grow). Each alert fires for its destination, and
 * not for the other.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { stringify } from 'yaml';
import { renderChart } from '../../support/helm.js';
import { waitFor } from '../../support/waiting.js';
import { startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { startPrometheus, type Prometheus } from '../support/prometheus.js';

jest.setTimeout(180_000);

interface RuleDoc {
  kind: string;
  spec: { groups: Array<{ name: string; rules: Array<Record<string, unknown>> }> };
}

interface ActiveAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

let failing: EventReceiver;
let refusing: EventReceiver;
let ing: RunningIngester;
let prom: Prometheus;
const spool = mkdtempSync(join(tmpdir(), 'intake-e2e-alerts-'));

/** The destination alerts as the chart renders them, with thresholds a test can wait for. */
function destinationRules(): RuleDoc['spec']['groups'] {
  const set = (key: string, value: string): string[] => [
    '--set',
    `monitoring.prometheusRule.destinations.${key}=${value}`,
  ];
  const docs = renderChart<RuleDoc>('intake', 'intake', [
    '--set',
    'monitoring.prometheusRule.enabled=true',
    ...set('circuitOpen.for', '2s'),
    ...set('backlogOld.olderThan', '3s'),
    ...set('backlogOld.for', '1s'),
    ...set('deadLettersGrowing.window', '1m'),
    ...set('deadLettersGrowing.moreThan', '2'),
    ...set('deadLettersGrowing.for', '1s'),
  ]);
  const rule = docs.find((d) => d.kind === 'PrometheusRule') as RuleDoc;
  return rule.spec.groups.filter((g) => g.name === 'intake-destinations');
}

beforeAll(async () => {
  failing = await startEventReceiver();
  failing.failWith = { status: 500, body: 'down' };
  refusing = await startEventReceiver();
  refusing.refuse = () => true;
  ing = await startIngester((c) => {
    c.spool = { path: spool };
    c.destinations = [
      {
        name: 'failing',
        default: true,
        http: { url: failing.url, timeout: '1s' },
        delivery: { backoffMin: '50ms', backoffMax: '200ms' },
        circuitBreaker: { consecutiveFailures: 3, openFor: '1s' },
      },
      { name: 'refusing', default: true, http: { url: refusing.url, timeout: '1s' } },
    ];
  });
  const groups = destinationRules();
  expect(groups.flatMap((g) => g.rules.map((r) => r.alert))).toEqual([
    'IntakeDestinationCircuitOpen',
    'IntakeDestinationBacklogOld',
    'IntakeDestinationDeadLettersGrowing',
    'IntakeDestinationAutoPaused',
  ]);
  prom = await startPrometheus({
    config: stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: ['rules.yaml'],
      scrape_configs: [{ job_name: 'intake', static_configs: [{ targets: [new URL(ing.adminUrl).host] }] }],
    }),
    files: { 'rules.yaml': stringify({ groups }) },
  });
}, 90_000);

afterAll(async () => {
  await prom?.stop();
  await ing?.stop();
  await failing?.close();
  await refusing?.close();
  rmSync(spool, { recursive: true, force: true });
});

async function alerts(): Promise<ActiveAlert[]> {
  const res = await fetch(`${prom.url}/api/v1/alerts`);
  return ((await res.json()) as { data: { alerts: ActiveAlert[] } }).data.alerts;
}

const firing = async (name: string, destination: string): Promise<ActiveAlert | undefined> =>
  (await alerts()).find(
    (a) => a.labels.alertname === name && a.labels.destination === destination && a.state === 'firing',
  );

it('the rule file loads, and each alert fires for its destination', async () => {
  // Prometheus read the rules (a rule it could not parse would leave the group out).
  const rules = (await (await fetch(`${prom.url}/api/v1/rules`)).json()) as {
    data: { groups: Array<{ name: string; rules: Array<{ name: string; health: string }> }> };
  };
  const group = rules.data.groups.find((g) => g.name === 'intake-destinations');
  expect(group?.rules.map((r) => r.name)).toHaveLength(4);

  // A few requests, a second apart: events for both destinations.
  for (let n = 0; n < 3; n++) {
    const events = Array.from({ length: 2 }, (_, i) => ({ source: `alerting-${n}-${i}`, severity: 3 }));
    const res = await post(`${ing.url}/events/webhook_demo`, events, {
      authorization: basic(DEMO.user, DEMO.password),
    });
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
  }

  const circuit = await waitFor(
    'IntakeDestinationCircuitOpen firing for failing',
    () => firing('IntakeDestinationCircuitOpen', 'failing'),
    60_000,
    500,
  );
  expect(circuit?.labels.severity).toBe('warning');
  expect(circuit?.annotations.runbook_url).toBe('docs/operations.md#intakedestinationcircuitopen');
  expect(circuit?.annotations.summary).toContain('destination failing');
  const backlog = await waitFor(
    'IntakeDestinationBacklogOld firing for failing',
    () => firing('IntakeDestinationBacklogOld', 'failing'),
    60_000,
    500,
  );
  expect(backlog?.annotations.runbook_url).toBe('docs/operations.md#intakedestinationbacklogold');
  const dead = await waitFor(
    'IntakeDestinationDeadLettersGrowing firing for refusing',
    () => firing('IntakeDestinationDeadLettersGrowing', 'refusing'),
    60_000,
    500,
  );
  expect(dead?.annotations.runbook_url).toBe('docs/operations.md#intakedestinationdeadlettersgrowing');

  // Each for its own destination only: the refusing one's circuit stays closed (a 400 is the
  // event's fault, not the receiver's) and its queue empties; the failing one dead-letters nothing.
  const active = await alerts();
  const about = (name: string, destination: string): ActiveAlert[] =>
    active.filter((a) => a.labels.alertname === name && a.labels.destination === destination);
  expect(about('IntakeDestinationCircuitOpen', 'refusing')).toEqual([]);
  expect(about('IntakeDestinationBacklogOld', 'refusing')).toEqual([]);
  expect(about('IntakeDestinationDeadLettersGrowing', 'failing')).toEqual([]);
  // No ingester here exports intake_destination_paused{reason="auto"} with a 1: the auto-pause alert stays quiet.
  expect(active.filter((a) => a.labels.alertname === 'IntakeDestinationAutoPaused')).toEqual([]);
});
