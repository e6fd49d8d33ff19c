/**
 * Tracing is configured the OpenTelemetry way, by the standard environment variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/), plus two
 * bounds of intake's own. Off unless OTEL_TRACES_EXPORTER=otlp: unlike the specification's default
 * (otlp), an ingester that was not told where to send spans sends none, and loads none of the SDK.
 *
 * Read here: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, OTEL_TRACES_SAMPLER(_ARG), OTEL_PROPAGATORS,
 * OTEL_BSP_* and the protocol. The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS,
 * _TIMEOUT, _COMPRESSION and the TLS files itself; the resource reads OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES. A value intake cannot honour fails the start, naming the variable.
 */

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export interface TracingSettings {
  sampler: SamplerName;
  /** OTEL_TRACES_SAMPLER_ARG for the ratio samplers: the share of traces kept, 0..1. */
  ratio: number;
  /** Whether W3C traceparent/tracestate are read from senders and sent on (OTEL_PROPAGATORS). */
  propagate: boolean;
  /** Sampled traces this replica starts per second at most, whoever asked for them. */
  maxTracesPerSecond: number;
  /** ... and per namespace, so one tenant's sampled requests cannot use up the others' traces. */
  maxTracesPerSecondPerNamespace: number;
  /** The export queue (OTEL_BSP_*): spans held at most, spans per export, delay and timeout. */
  queue: { maxSpans: number; batchSpans: number; delayMs: number; timeoutMs: number };
}

export class TracingSettingsError extends Error {
  override readonly name = 'TracingSettingsError';
}

type Env = Readonly<Record<string, string | undefined>>;

const value = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
};

function number(env: Env, name: string, fallback: number, o: { min: number; max: number; integer?: boolean }): number {
  const text = value(env, name);
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n < o.min || n > o.max || (o.integer && !Number.isInteger(n)))
    throw new TracingSettingsError(
      `${name}=${JSON.stringify(text)}: must be ${o.integer ? 'an integer' : 'a number'} from ${o.min} to ${o.max}`,
    );
  return n;
}

/** The tracing settings from the environment, or undefined when tracing is off. */
export function tracingSettings(env: Env): TracingSettings | undefined {
  const disabled = value(env, 'OTEL_SDK_DISABLED');
  if (disabled?.toLowerCase() === 'true') return undefined;
  const exporters = (value(env, 'OTEL_TRACES_EXPORTER') ?? 'none')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const unknown = exporters.filter((e) => e !== 'otlp' && e !== 'none');
  if (unknown.length > 0)
    throw new TracingSettingsError(
      `OTEL_TRACES_EXPORTER=${JSON.stringify(exporters.join(','))}: intake exports traces over OTLP only ("otlp", or "none")`,
    );
  if (!exporters.includes('otlp')) return undefined;
  const protocol = value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && protocol !== 'http/protobuf')
    throw new TracingSettingsError(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${JSON.stringify(protocol)}: intake exports over OTLP/HTTP with protobuf ("http/protobuf") only`,
    );
  const sampler = (value(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler))
    throw new TracingSettingsError(
      `OTEL_TRACES_SAMPLER=${JSON.stringify(sampler)}: one of ${SAMPLERS.join(', ')} (jaeger_remote and xray are not built in)`,
    );
  const ratio = sampler.endsWith('traceidratio') ? number(env, 'OTEL_TRACES_SAMPLER_ARG', 1, { min: 0, max: 1 }) : 1;
  const propagators = (value(env, 'OTEL_PROPAGATORS') ?? 'tracecontext,baggage').split(',').map((p) => p.trim());
  const maxTracesPerSecond = number(env, 'INTAKE_TRACES_PER_SECOND', 100, { min: 0, max: 1_000_000 });
  const maxSpans = number(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, { min: 1, max: 1_000_000, integer: true });
  const batchSpans = number(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, { min: 1, max: 1_000_000, integer: true });
  if (batchSpans > maxSpans)
    throw new TracingSettingsError(
      `OTEL_BSP_MAX_EXPORT_BATCH_SIZE=${batchSpans} is larger than OTEL_BSP_MAX_QUEUE_SIZE=${maxSpans}`,
    );
  return {
    sampler,
    ratio,
    propagate: propagators.includes('tracecontext'),
    maxTracesPerSecond,
    maxTracesPerSecondPerNamespace: number(env, 'INTAKE_TRACES_PER_SECOND_PER_NAMESPACE', 10, {
      min: 0,
      max: 1_000_000,
    }),
    queue: {
      maxSpans,
      batchSpans,
      delayMs: number(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, { min: 0, max: 3_600_000, integer: true }),
      timeoutMs: number(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, { min: 1, max: 3_600_000, integer: true }),
    },
  };
}
