/**
 * The OpenTelemetry SDK behind tracing.ts, imported only when tracing is on: a tracer provider
 * with a bounded batch queue and the OTLP/HTTP (protobuf) exporter, and a sampler that bounds the
 * traces anyone can ask for (trace-budget.ts).
 *
 * Contexts are passed explicitly (the parent of every span is given), so no context manager and
 * no async hooks are installed: the request path pays for tracing only where it calls it.
 *
 * The export queue never blocks: a finished span goes to the batch processor's queue, at most
 * OTEL_BSP_MAX_QUEUE_SIZE spans (dropped when full), each bounded (SPAN_LIMITS, a tracestate of
 * at most 512 characters, at most MAX_LINKS links), so the queue holds at most a few MiB.
 */
import {
  createTraceState,
  diag,
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { USER_AGENT } from '../outbound/http-client.js';
import { boundedTracestate, parseTraceparent, type TraceCarrier } from './carrier.js';
import type { TracingSettings } from './settings.js';
import { TraceBudget } from './trace-budget.js';
import type { ActiveRequestTrace, DeliveryTrace, TraceRecorder, TraceStep, TracedTenant } from './tracing.js';

/** Links a delivery span keeps to the other events of its batch (their traces). */
const MAX_LINKS = 16;
const SPAN_LIMITS = {
  attributeValueLengthLimit: 256,
  attributeCountLimit: 32,
  linkCountLimit: MAX_LINKS,
  eventCountLimit: 8,
  attributePerEventCountLimit: 8,
  attributePerLinkCountLimit: 4,
};
/** How long shutdown waits for the last export. */
const SHUTDOWN_TIMEOUT_MS = 5000;
/** The SDK's own warnings (an export that failed, spans dropped) reach the log at most this often. */
const DIAG_LOG_INTERVAL_MS = 60_000;

const NOT_SAMPLED: SamplingResult = { decision: SamplingDecision.NOT_RECORD };
const SAMPLED: SamplingResult = { decision: SamplingDecision.RECORD_AND_SAMPLED };

/**
 * The configured sampler (OTEL_TRACES_SAMPLER) for the traces a request may start or join, within
 * the trace budget; intake's own parents are followed as they decided:
 * - a span whose parent is local (map, hand-off under receive) or carried by the bus or the
 *   outbox (a delivery attempt: the receiving replica's decision, already within its budget)
 *   is sampled as its parent was;
 * - a receive span (SERVER), child of a sender's traceparent or a root, and a delivery attempt
 *   of events that carry no context, ask the configured sampler, and a sampled answer must
 *   take a trace from the budget (the namespace's share and the replica's), else it is not sampled.
 */
export class BoundedSampler implements Sampler {
  constructor(
    private readonly configured: Sampler,
    private readonly budget: TraceBudget,
  ) {}

  shouldSample(
    context: Context,
    traceId: string,
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    const parent = trace.getSpanContext(context);
    if (parent && (!parent.isRemote || kind !== SpanKind.SERVER))
      return (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? SAMPLED : NOT_SAMPLED;
    const wanted = this.configured.shouldSample(context, traceId, name, kind, attributes, links);
    if (wanted.decision !== SamplingDecision.RECORD_AND_SAMPLED) return wanted;
    const namespace = attributes['intake.namespace'];
    return this.budget.take(typeof namespace === 'string' ? namespace : '') ? wanted : NOT_SAMPLED;
  }

  toString(): string {
    return `BoundedSampler{${this.configured.toString()}}`;
  }
}

/** OTEL_TRACES_SAMPLER as the SDK's sampler. */
export function configuredSampler(s: Pick<TracingSettings, 'sampler' | 'ratio'>): Sampler {
  const root = (name: string): Sampler =>
    name.endsWith('always_on')
      ? new AlwaysOnSampler()
      : name.endsWith('always_off')
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(s.ratio);
  return s.sampler.startsWith('parentbased_') ? new ParentBasedSampler({ root: root(s.sampler) }) : root(s.sampler);
}

/** A span's context as the W3C headers. */
export function carrierOfSpan(span: Span): TraceCarrier {
  const c = span.spanContext();
  const traceparent = `00-${c.traceId}-${c.spanId}-${(c.traceFlags & TraceFlags.SAMPLED) === 1 ? '01' : '00'}`;
  const tracestate = c.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** A carried (or sent) context as a remote parent; undefined when the traceparent is not valid. */
export function remoteContext(traceparent: string | undefined, tracestate: string | undefined): Context | undefined {
  const parsed = parseTraceparent(traceparent);
  if (!parsed) return undefined;
  const state = boundedTracestate(tracestate);
  const parent: SpanContext = {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
    ...(state !== undefined ? { traceState: createTraceState(state) } : {}),
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

const headerText = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? undefined : v);

/** A step of a request: ended once, by itself or with the request. */
class Step implements TraceStep {
  readonly carrier: TraceCarrier;
  private ended = false;

  constructor(private readonly span: Span) {
    this.carrier = carrierOfSpan(span);
  }

  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (err !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(err) });
    this.span.end();
  }
}

const noop = (): void => undefined;

class RequestSpan implements ActiveRequestTrace {
  private readonly steps: Step[] = [];
  private unrecorded?: TraceStep;
  private readonly context: Context;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  step(name: 'map' | 'hand-off'): TraceStep {
    // Not sampled: no span would be recorded under it, so the steps carry the request's own
    // context (its trace id, sampled off) and cost nothing more.
    if (!this.span.isRecording()) return (this.unrecorded ??= { carrier: carrierOfSpan(this.span), end: noop });
    const kind = name === 'hand-off' ? SpanKind.PRODUCER : SpanKind.INTERNAL;
    const step = new Step(this.tracer.startSpan(`intake.${name}`, { kind }, this.context));
    this.steps.push(step);
    return step;
  }

  end(err: unknown, accepted: number): void {
    for (const s of this.steps) s.end(err);
    if (err === undefined) {
      this.span.setAttribute('http.response.status_code', 200);
      if (accepted > 0) this.span.setAttribute('intake.accepted', accepted);
    } else {
      const e = err as { statusCode?: unknown; code?: unknown; name?: unknown };
      this.span.setAttribute('http.response.status_code', typeof e.statusCode === 'number' ? e.statusCode : 500);
      this.span.setAttribute('error.type', String(e.code ?? e.name ?? 'error'));
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(err) });
    }
    this.span.end();
  }
}

/**
 * What a span's status says of a refusal: the error's catalogue code (or its class), never its
 * message, which may quote what the sender sent (a field's value in a validation error).
 */
const messageOf = (err: unknown): string => {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
};

export function createRecorder(settings: TracingSettings, logger: Logger): TraceRecorder {
  routeDiagnostics(logger.child({ component: 'tracing' }));
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'intake-ingester', 'service.version': USER_AGENT.slice(7) }))
    .merge(detectResources({ detectors: [envDetector] }));
  const processor = new BatchSpanProcessor({
    exporter: new OTLPTraceExporter(),
    maxQueueSize: settings.queue.maxSpans,
    maxExportBatchSize: settings.queue.batchSpans,
    scheduledDelayMillis: settings.queue.delayMs,
    exportTimeoutMillis: settings.queue.timeoutMs,
  });
  const provider = new TracerProvider({
    resource,
    sampler: new BoundedSampler(
      configuredSampler(settings),
      new TraceBudget(settings.maxTracesPerSecond, settings.maxTracesPerSecondPerNamespace),
    ),
    spanLimits: SPAN_LIMITS,
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('intake');
  logger.info(
    {
      sampler: settings.sampler,
      ratio: settings.ratio,
      maxTracesPerSecond: settings.maxTracesPerSecond,
      maxTracesPerSecondPerNamespace: settings.maxTracesPerSecondPerNamespace,
      queueSpans: settings.queue.maxSpans,
      propagate: settings.propagate,
    },
    'exporting traces over OTLP',
  );

  return {
    request(header, route, tenant: TracedTenant): ActiveRequestTrace {
      const parent = settings.propagate
        ? remoteContext(headerText(header('traceparent')), headerText(header('tracestate')))
        : undefined;
      // The sampler needs the namespace (its share of the budget); the rest only a recorded span.
      const span = tracer.startSpan(
        'intake.receive',
        { kind: SpanKind.SERVER, attributes: { 'intake.namespace': tenant.namespace } },
        parent ?? ROOT_CONTEXT,
      );
      if (span.isRecording())
        span.setAttributes({
          'http.request.method': 'POST',
          'http.route': route,
          'intake.integration': tenant.name,
        });
      return new RequestSpan(tracer, span);
    },

    delivery(destination, carriers, attempt): DeliveryTrace {
      let parent: Context | undefined;
      const links: Link[] = [];
      let last: string | undefined;
      for (const c of carriers) {
        // A batch's events often come from one message: one context, seen in a row.
        if (c === undefined || c.traceparent === last) continue;
        last = c.traceparent;
        const carried = remoteContext(c.traceparent, c.tracestate);
        if (!carried) continue;
        if (!parent) parent = carried;
        else if (links.length < MAX_LINKS) links.push({ context: trace.getSpanContext(carried) as SpanContext });
      }
      const span = tracer.startSpan(
        'intake.deliver',
        {
          kind: SpanKind.CLIENT,
          links,
          attributes: {
            'intake.destination': destination.name,
            'intake.destination.kind': destination.kind,
            'intake.attempt': attempt,
            'intake.events': carriers.length,
          },
        },
        parent ?? ROOT_CONTEXT,
      );
      return {
        carrier: settings.propagate ? carrierOfSpan(span) : undefined,
        end(outcome): void {
          span.setAttribute('intake.outcome', outcome.kind);
          if (outcome.reason !== undefined) span.setAttribute('intake.outcome.reason', outcome.reason);
          if (outcome.kind !== 'accepted')
            // The receiver's answer, as the outcome keeps it (sanitised, bounded), cut to an attribute's length.
            span.setStatus({ code: SpanStatusCode.ERROR, message: (outcome.error ?? outcome.kind).slice(0, 256) });
          span.end();
        },
      };
    },

    async shutdown(): Promise<void> {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
    },
  };
}

/** The SDK's warnings and errors (a failed export, dropped spans) as log lines, at most one a minute. */
function routeDiagnostics(logger: Logger): void {
  let last = 0;
  const log = (message: string): void => {
    const now = Date.now();
    if (now - last < DIAG_LOG_INTERVAL_MS) return;
    last = now;
    logger.warn({ detail: message.slice(0, 512) }, 'tracing: spans were not exported');
  };
  const ignore = (): void => undefined;
  diag.setLogger(
    { error: log, warn: log, info: ignore, debug: ignore, verbose: ignore },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}
