import { tracingSettings, TracingSettingsError } from '../../../../ingester/tracing/settings.js';

describe('tracingSettings', () => {
  it('is off unless OTEL_TRACES_EXPORTER asks for otlp', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })).toBeDefined();
  });

  it("takes the specification defaults and intake's bounds", () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({
      sampler: 'parentbased_always_on',
      ratio: 1,
      propagate: true,
      maxTracesPerSecond: 100,
      maxTracesPerSecondPerNamespace: 10,
      queue: { maxSpans: 2048, batchSpans: 512, delayMs: 5000, timeoutMs: 30_000 },
    });
  });

  it('reads the sampler, propagators, queue and bounds', () => {
    expect(
      tracingSettings({
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_PROPAGATORS: 'b3',
        OTEL_BSP_MAX_QUEUE_SIZE: '100',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '50',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_BSP_EXPORT_TIMEOUT: '1000',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        INTAKE_TRACES_PER_SECOND: '5',
        INTAKE_TRACES_PER_SECOND_PER_NAMESPACE: '0.5',
      }),
    ).toEqual({
      sampler: 'parentbased_traceidratio',
      ratio: 0.25,
      propagate: false,
      maxTracesPerSecond: 5,
      maxTracesPerSecondPerNamespace: 0.5,
      queue: { maxSpans: 100, batchSpans: 50, delayMs: 200, timeoutMs: 1000 },
    });
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, /OTEL_TRACES_EXPORTER="jaeger"/],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /http\/protobuf/],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, /http\/protobuf/],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'xray' }, /OTEL_TRACES_SAMPLER="xray"/],
    [
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' },
      /OTEL_TRACES_SAMPLER_ARG="2": must be a number from 0 to 1/,
    ],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_MAX_QUEUE_SIZE: '1.5' }, /OTEL_BSP_MAX_QUEUE_SIZE/],
    [
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' },
      /larger than OTEL_BSP_MAX_QUEUE_SIZE/,
    ],
    [{ OTEL_TRACES_EXPORTER: 'otlp', INTAKE_TRACES_PER_SECOND: '-1' }, /INTAKE_TRACES_PER_SECOND/],
  ])('refuses what it cannot honour: %j', (env, message) => {
    expect(() => tracingSettings(env)).toThrow(TracingSettingsError);
    expect(() => tracingSettings(env)).toThrow(message);
  });
});
