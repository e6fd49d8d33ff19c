/**
 * ingester.env: extra environment of the ingester container, e.g. the OTEL_* variables that turn
 * traces on (docs/tracing.md); none by default; an entry without a name is refused by the schema.
 */
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  spec?: { template?: { spec?: { containers?: Array<{ name: string; env?: Array<Record<string, unknown>> }> } } };
}

const ingesterEnv = (...set: string[]) =>
  renderChart<Doc>('intake', 'intake', set)
    .filter((d) => d.kind === 'Deployment')
    .flatMap((d) => d.spec?.template?.spec?.containers ?? [])
    .filter((c) => c.name === 'ingester')
    .map((c) => c.env);

describe('chart: the ingester container environment', () => {
  it('has none of its own by default', () => {
    expect(ingesterEnv()).toEqual([undefined]);
  });

  it('takes values and references to Secrets', () => {
    expect(
      ingesterEnv(
        '--set',
        'ingester.env[0].name=OTEL_TRACES_EXPORTER',
        '--set',
        'ingester.env[0].value=otlp',
        '--set',
        'ingester.env[1].name=OTEL_EXPORTER_OTLP_HEADERS',
        '--set',
        'ingester.env[1].valueFrom.secretKeyRef.name=otlp',
        '--set',
        'ingester.env[1].valueFrom.secretKeyRef.key=headers',
      ),
    ).toEqual([
      [
        { name: 'OTEL_TRACES_EXPORTER', value: 'otlp' },
        { name: 'OTEL_EXPORTER_OTLP_HEADERS', valueFrom: { secretKeyRef: { name: 'otlp', key: 'headers' } } },
      ],
    ]);
  });

  it('refuses an entry without a name', () => {
    expect(() => ingesterEnv('--set', 'ingester.env[0].value=otlp')).toThrow(/name/);
  });
});
