/**
 * The mapped webhook pipeline (docs/design.md §3-4, README "Data mapping"), one step after another:
 *   body -> mapping (preset or expression, guardrails on) -> one event or an array
 *        -> the usual validation and normalisation (parseEvents, unchanged)
 * A payload that authenticated but cannot become valid events is never dropped silently: it is kept
 * in the dead letter first, then answered 422 with the errors. `?dryRun=true` runs the same steps
 * and shows the result without accepting, keeping or counting anything.
 */
import type { FieldError } from '../errors.js';
import { IntakeError } from '../errors.js';
import { parseEvents, type EventContext, type NormalisedEvent } from '../events.js';
import type { RouteEntry } from '../route-table.js';
import { meteredEvaluation } from '../limits/mapping-cpu.js';
import { MappingError } from '../../api/mapping/engine.js';
import type { DeadLetterStore } from './dead-letter.js';
import type { MappingFailureReason, MappingMetrics } from './metrics.js';

/** Why a mapped payload produced no valid events: what the 422 and the dead letter say. */
export class MappingFailure extends Error {
  constructor(
    readonly reason: MappingFailureReason,
    message: string,
    readonly errors: FieldError[],
  ) {
    super(message);
    this.name = 'MappingFailure';
  }
}

export interface DryRunResult {
  success: boolean;
  dryRun: true;
  message: string;
  mapping: string;
  events?: NormalisedEvent[];
  errors?: FieldError[];
}

export interface MappedWebhooksOptions {
  deadLetter: DeadLetterStore;
  metrics: MappingMetrics;
  eventsPerRequest: number;
  /** Charges an evaluation's CPU milliseconds to the route's namespace (per-tenant limits). */
  chargeMappingCpu?: (entry: RouteEntry, cpuMs: number) => void;
}

export const isDryRun = (query: unknown): boolean => {
  const v = (query as Record<string, unknown> | undefined)?.dryRun;
  return v === 'true' || v === '1' || v === '';
};

export class MappedWebhooks {
  constructor(private readonly o: MappedWebhooksOptions) {}

  get deadLetter(): DeadLetterStore {
    return this.o.deadLetter;
  }

  /** Step 1+2: the mapping (when the route has one), then validation; throws MappingFailure or the usual 400. */
  async map(body: unknown, entry: RouteEntry, ctx: EventContext): Promise<NormalisedEvent[]> {
    if (!entry.mapping) return parseEvents(body, this.o.eventsPerRequest, ctx);
    let mapped: unknown[];
    try {
      const mapping = entry.mapping;
      mapped = await meteredEvaluation(() => mapping.evaluate(body), (cpuMs) => this.o.chargeMappingCpu?.(entry, cpuMs));
    } catch (err) {
      const e = MappingError.from(err);
      const message = `the mapping (${entry.mapping.label}) failed: ${e.describe()}`;
      throw new MappingFailure(e.guardrail ? 'guardrail' : 'evaluation', message, [{ field: '', message }]);
    }
    if (mapped.length === 0) {
      const message = `the mapping (${entry.mapping.label}) produced no event from this payload`;
      throw new MappingFailure('no_events', message, [{ field: '', message }]);
    }
    try {
      return parseEvents(mapped, this.o.eventsPerRequest, ctx);
    } catch (err) {
      if (!(err instanceof IntakeError)) throw err;
      const problems = err.fieldErrors?.length ?? 1;
      const message = `the mapping (${entry.mapping.label}) produced ${mapped.length} event(s) that do not pass validation (${problems} problem(s), listed in errors)`;
      throw new MappingFailure('invalid_events', message, err.fieldErrors ?? [{ field: '', message: err.message }]);
    }
  }

  /** A live request: events, or the payload kept in the dead letter and a 422 (503 if it cannot be kept). */
  async toEvents(body: unknown, entry: RouteEntry, ctx: EventContext, contentType?: string): Promise<NormalisedEvent[]> {
    try {
      return await this.map(body, entry, ctx);
    } catch (err) {
      if (!(err instanceof MappingFailure)) throw err;
      const labels = { integration: entry.name, namespace: entry.namespace };
      this.o.metrics.failures.inc({ ...labels, reason: err.reason });
      let id: string;
      try {
        id = await this.o.deadLetter.put({ ...labels, reason: err.message, errors: err.errors.slice(0, 20), ...(contentType ? { contentType } : {}), payload: body });
      } catch (cause) {
        throw new IntakeError('DEAD_LETTER_FAILED', 503, `${err.message}; the payload could not be kept for replay (${(cause as Error).message}), so retry later`, err.errors, { 'retry-after': '30' }, { cause });
      }
      this.o.metrics.deadLettered.inc(labels);
      throw unprocessable(`${err.message}; the payload was kept for replay as dead letter ${id}`, err.errors, id);
    }
  }

  /** ?dryRun=true: the same steps, nothing accepted, kept or counted. */
  async dryRun(body: unknown, entry: RouteEntry, ctx: EventContext): Promise<DryRunResult> {
    const mapping = entry.mapping?.label ?? 'none';
    try {
      const events = await this.map(body, entry, ctx);
      return { success: true, dryRun: true, mapping, message: `dry run: ${events.length} event(s) would be accepted; nothing was accepted`, events };
    } catch (err) {
      if (err instanceof MappingFailure) return { success: false, dryRun: true, mapping, message: `dry run: ${err.message}`, errors: err.errors };
      if (err instanceof IntakeError) return { success: false, dryRun: true, mapping, message: `dry run: ${err.message}`, errors: err.fieldErrors ?? [] };
      throw err;
    }
  }
}

export const unprocessable = (message: string, errors: FieldError[], deadLetterId?: string): IntakeError =>
  new IntakeError('MAPPING_FAILED', 422, message, errors, deadLetterId ? { 'x-intake-dead-letter-id': deadLetterId } : undefined);

