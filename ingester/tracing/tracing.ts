/**
 * OpenTelemetry traces of the request and delivery paths: the one place the rest of intake calls.
 *
 *   receive   (SERVER) an authenticated request on the webhook or metrics route, child of the
 *             sender's traceparent when it sent one (traceRequests, around the route's handler)
 *   map       the mapping and validation of its body            (traceOf(req).step('map'))
 *   hand-off  to the sinks; its context is what the bus message  (traceOf(req).step('hand-off'))
 *             and the outbox row carry to the delivering replica
 *   deliver   (CLIENT) one delivery attempt to a destination; its traceparent is sent on the
 *             request (traceDelivery, in the dispatcher)
 *
 * Off unless configured (settings.ts): then every call here is a check of one variable, the route
 * handlers are not even wrapped, and no OpenTelemetry code is loaded (recorder.ts is imported
 * only when tracing starts). Spans never wait for the exporter: they go to a bounded queue that
 * drops when full (recorder.ts).
 */
import type { Logger } from 'pino';
import { carrierFrom, type TraceCarrier } from './carrier.js';
import { tracingSettings } from './settings.js';

export type { TraceCarrier } from './carrier.js';

/** A step of a traced request, ended by end() or, if the request fails first, with the request. */
export interface TraceStep {
  /** This step's context, to carry with what it hands on. */
  readonly carrier: TraceCarrier;
  end(): void;
}

export interface RequestTrace {
  step(name: 'map' | 'hand-off'): TraceStep;
}

/** One delivery attempt. */
export interface DeliveryTrace {
  /** Sent as the delivery request's traceparent (and tracestate); none when OTEL_PROPAGATORS leaves tracecontext out. */
  readonly carrier: TraceCarrier | undefined;
  end(outcome: { kind: string; reason?: string; error?: string }): void;
}

/** What a request trace needs to know of the route. */
export interface TracedTenant {
  namespace: string;
  name: string;
}

/** The request side of the recorder: started by the handler wrapper, ended once the handler settles. */
export interface ActiveRequestTrace extends RequestTrace {
  end(err: unknown, accepted: number): void;
}

export interface TraceRecorder {
  request(
    header: (name: string) => string | string[] | undefined,
    route: string,
    tenant: TracedTenant,
  ): ActiveRequestTrace;
  delivery(
    destination: { name: string; kind: string },
    carriers: ReadonlyArray<TraceCarrier | undefined>,
    attempt: number,
  ): DeliveryTrace;
  shutdown(): Promise<void>;
}

let recorder: TraceRecorder | undefined;
/** Where a traced request keeps its trace (a WeakMap of every request in flight cost the collector more). */
const TRACE = Symbol('intake.trace');

/**
 * Starts tracing when the environment asks for it (settings.ts); a setting intake cannot honour
 * throws. Call before the routes are built: traceRequests wraps handlers only while tracing is on.
 */
export async function startTracing(env: NodeJS.ProcessEnv, logger: Logger): Promise<void> {
  const settings = tracingSettings(env);
  if (!settings || recorder) return;
  recorder = (await import('./recorder.js')).createRecorder(settings, logger);
}

/** Exports what is queued (within the exporter's timeout) and stops. */
export async function stopTracing(): Promise<void> {
  const r = recorder;
  recorder = undefined;
  await r?.shutdown();
}

export const tracingOn = (): boolean => recorder !== undefined;

/** The request a route handler serves, as far as tracing needs it. */
interface TracedRequest {
  headers: Record<string, string | string[] | undefined>;
  routeEntry: TracedTenant | null;
  accepted: number;
}

/**
 * A route handler with a receive span around it (tracing on), else the handler itself. The span
 * starts once the sender is authenticated and admitted and its body read (the handler's start),
 * and ends when the handler settles; a refusal thrown is recorded with its status.
 */
export function traceRequests<Q extends TracedRequest, A extends unknown[], T>(
  route: string,
  handler: (req: Q, ...rest: A) => Promise<T>,
): (req: Q, ...rest: A) => Promise<T> {
  const r = recorder;
  if (!r) return handler;
  return async (req: Q, ...rest: A): Promise<T> => {
    const tenant = req.routeEntry;
    if (!tenant) return handler(req, ...rest);
    const trace = r.request((name) => req.headers[name], route, tenant);
    (req as unknown as Record<symbol, ActiveRequestTrace>)[TRACE] = trace;
    try {
      const answer = await handler(req, ...rest);
      trace.end(undefined, req.accepted);
      return answer;
    } catch (err) {
      trace.end(err, 0);
      throw err;
    }
  };
}

/** The request's trace, while tracing is on (sampled or not: an unsampled one still carries its trace id). */
export function traceOf(req: object): RequestTrace | undefined {
  return recorder ? (req as Record<symbol, ActiveRequestTrace | undefined>)[TRACE] : undefined;
}

/**
 * A span for one delivery attempt of `batch` to `destination`: the child of the first event's
 * carried context, linked to the others'. Undefined while tracing is off.
 */
export function traceDelivery(
  destination: { name: string; kind: string },
  batch: ReadonlyArray<{ readonly trace?: TraceCarrier | undefined; readonly attempt: number }>,
): DeliveryTrace | undefined {
  const r = recorder;
  if (!r) return undefined;
  let attempt = 1;
  const carriers: Array<TraceCarrier | undefined> = [];
  for (const d of batch) {
    carriers.push(d.trace);
    if (d.attempt > attempt) attempt = d.attempt;
  }
  return r.delivery(destination, carriers, attempt);
}

/**
 * The context a bus message carries (its headers), read only while tracing is on: a replica that
 * does not trace delivers without parsing them.
 */
export function carriedTrace(header: (name: string) => string | undefined): TraceCarrier | undefined {
  return recorder ? carrierFrom(header) : undefined;
}
