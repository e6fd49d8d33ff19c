/**
 * A real OpenTelemetry Collector on 127.0.0.1 for the tracing tests: .tools/bin/otelcol-intake
 * (test/otelcol, built by `make tools` from the Go module proxy) with an OTLP/HTTP receiver and
 * the file exporter, whose JSON lines (OTLP JSON: ids as hex) the test reads back as spans.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../support/paths.js';
import { freePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';

export const OTELCOL = join(ROOT, '.tools/bin/otelcol-intake');

/** A span as the file exporter wrote it, with its resource's service.name and its attributes flattened. */
export interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number; message?: string };
}

export interface RunningCollector {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  spans(): ExportedSpan[];
  output(): string;
  stop(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpLine {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: OtlpAttribute[];
        links?: Array<{ traceId: string; spanId: string }>;
        status?: { code?: number; message?: string };
      }>;
    }>;
  }>;
}

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue ?? ''));
const flatten = (attrs: OtlpAttribute[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(attrs.map((a) => [a.key, valueOf(a.value)]));

export async function startCollector(): Promise<RunningCollector> {
  if (!existsSync(OTELCOL)) throw new Error(`${OTELCOL} is missing: run \`make tools\``);
  const dir = mkdtempSync(join(tmpdir(), 'intake-otelcol-'));
  const port = await freePort();
  const file = join(dir, 'spans.jsonl');
  writeFileSync(
    join(dir, 'config.yaml'),
    [
      'receivers:',
      '  otlp:',
      '    protocols:',
      '      http:',
      `        endpoint: 127.0.0.1:${port}`,
      'exporters:',
      '  file:',
      `    path: ${file}`,
      '    flush_interval: 50ms',
      'service:',
      '  telemetry:',
      '    metrics:',
      '      level: none',
      '  pipelines:',
      '    traces:',
      '      receivers: [otlp]',
      '      exporters: [file]',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(OTELCOL, ['--config', join(dir, 'config.yaml')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d));
  child.stderr?.on('data', (d: Buffer) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(
    'the collector ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`the collector exited: ${out}`);
      return out.includes('Everything is ready');
    },
    30_000,
    50,
  );
  return {
    endpoint: `http://127.0.0.1:${port}`,
    output: () => out,
    spans: () => {
      if (!existsSync(file)) return [];
      const spans: ExportedSpan[] = [];
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        let parsed: OtlpLine;
        try {
          parsed = JSON.parse(line) as OtlpLine;
        } catch {
          continue; // a line still being written
        }
        for (const rs of parsed.resourceSpans ?? []) {
          const service = String(flatten(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind ?? 0,
                attributes: flatten(s.attributes),
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                status: s.status ?? {},
              });
        }
      }
      return spans;
    },
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The environment that points an ingester's traces at the collector, exported within a moment. */
export function tracingEnv(
  collector: RunningCollector,
  service: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_SERVICE_NAME: service,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...extra,
  };
}
