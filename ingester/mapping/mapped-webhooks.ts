/**
 * The mapped webhook pipeline (docs/design.md §3-4, README "Data mapping"), one step after another:
 *   body -> mapping (preset or expression, guardrails on) -> one event or an array
 *        -> the usual validation and normalisation (parseEvents, unchanged)
 * A payload that authenticated but cannot become valid events is never dropped silently: it is kept
 * in the dead letter first, then answered 422 with the errors. `?dryRun=true` runs the same steps
 * and shows the result without accepting, keeping or counting anything.
 */
import { inertText } from '../../common/sender-text.js';
import {
  deadLetterFailed,
  inertFieldErrors,
  IntakeError,
  LimitError,
  mappingBusy,
  mappingFailed,
  type FieldError,
} from '../core/errors.js';
import { parseEvents, type EventContext, type NormalisedEvent } from '../core/event.js';
import type { RouteEntry } from '../routing/route-table.js';
import { MappingBusy, MappingError, type MappingResult } from '../../api/mapping/mapping-model.js';
import { LetterTooLarge, type DeadLetterStore } from '../dead-letters/model.js';
import type { MappingFailureReason, MappingMetrics } from './metrics.js';
import { decideHere, type RouteDecider } from '../routing/rule-decisions.js';
import type { RuleDecision } from '../../api/routing-rules.js';

/**
 * Why a mapped payload produced no valid events: what the 422 and the dead letter say. Its message
 * and errors may quote the payload (a `$error` text, a key) and are read in activity and
 * `intake deadletter list`: inert from the start (common/sender-text.ts).
 */
export class MappingFailure extends Error {
  readonly errors: FieldError[];

  constructor(
    readonly reason: MappingFailureReason,
    message: string,
    errors: FieldError[],
  ) {
    super(inertText(message));
    this.name = 'MappingFailure';
    this.errors = inertFieldErrors(errors);
  }
}

export interface DryRunResult {
  success: boolean;
  dryRun: true;
  message: string;
  mapping: string;
  events?: NormalisedEvent[];
  /** Per event, in order: the routing rules it matched and where it would be delivered (nothing is). */
  routing?: EventRouting[];
  errors?: FieldError[];
}

export interface EventRouting {
  /** The rules that matched (name, else index), in order; empty: none, the integration's destinations. */
  matched: string[];
  destinations: readonly string[];
  /** The drop rule that stopped it, when one did. */
  droppedBy?: string;
}

export interface MappedWebhooksOptions {
  deadLetter: DeadLetterStore;
  metrics: MappingMetrics;
  eventsPerRequest: number;
  /** Events one mapped payload may give (mapping.maxEvents; default eventsPerRequest). */
  mappedEventsPerRequest?: number;
  /** Charges a preset's evaluation CPU milliseconds, successful or not, to the route's namespace (per-tenant limits). */
  chargeMappingCpu?: (entry: RouteEntry, cpuMs: number) => void;
  /**
   * Before a custom expression is evaluated (it runs in a worker): reserves its worst case from the
   * namespace's mapping CPU, or throws the refusal; returns the settle function, called once with
   * the CPU time really used (per-tenant limits).
   */
  reserveMappingCpu?: (entry: RouteEntry) => (usedMs: number) => void;
  /** Decides where the routing rules send each event, charged to the namespace (absent: uncharged, here). */
  routeDecider?: RouteDecider;
}

export const isDryRun = (query: unknown): boolean => {
  const v = (query as Record<string, unknown> | undefined)?.dryRun;
  return v === 'true' || v === '1' || v === '';
};

export class MappedWebhooks {
  constructor(private readonly options: MappedWebhooksOptions) {}

  get deadLetter(): DeadLetterStore {
    return this.options.deadLetter;
  }

  /**
   * The mapping (when the route has one: the one place on the events path that asks), then
   * validation; throws MappingFailure, the usual 400, 429/503 when the namespace cannot reserve
   * the mapping's CPU, or 503 when the mapping workers (or the namespace's share of them) are full.
   * A live request (toEvents), a dry run and a dead letter's replay all come through here. `json`: the body's bytes, for a mapping
   * that runs in a worker.
   */
  async map(body: unknown, entry: RouteEntry, ctx: EventContext, json?: Uint8Array): Promise<NormalisedEvent[]> {
    if (!entry.mapping) return parseEvents(body, this.options.eventsPerRequest, ctx);
    const result = await this.evaluate(body, entry, json);
    const mapped = result.items;
    if (mapped.length === 0) {
      const message = `the mapping (${entry.mapping.label}) produced no event from this payload`;
      throw new MappingFailure('no_events', message, [{ field: '', message }]);
    }
    try {
      const withTexts = result.texts ? { ...ctx, itemTexts: result.texts } : ctx;
      return parseEvents(mapped, this.options.mappedEventsPerRequest ?? this.options.eventsPerRequest, withTexts);
    } catch (err) {
      if (!(err instanceof IntakeError)) throw err;
      const problems = err.fieldErrors?.length ?? 1;
      const message = `the mapping (${entry.mapping.label}) produced ${mapped.length} event(s) that do not pass validation (${problems} problem(s), listed in errors)`;
      throw new MappingFailure('invalid_events', message, err.fieldErrors ?? [{ field: '', message: err.message }]);
    }
  }

  /**
   * The mapping's evaluation, paid for: a custom expression (isolated, in a worker) reserves its
   * worst case from the namespace's CPU budget before it is queued (a refusal is thrown as is:
   * 429/503 MAPPING_CPU_LIMITED), and the reservation is settled to what it used however it ends
   * (all of it given back when the workers refused it). A preset, on this thread, is charged after.
   */
  private async evaluate(body: unknown, entry: RouteEntry, json?: Uint8Array): Promise<MappingResult> {
    const mapping = entry.mapping as NonNullable<RouteEntry['mapping']>;
    const settle = mapping.isolated ? this.options.reserveMappingCpu?.(entry) : undefined;
    const pay = (cpuMs: number): void => {
      const labels = { integration: entry.name, namespace: entry.namespace };
      this.options.metrics.cpuSeconds.inc(labels, cpuMs / 1000);
      if (settle) settle(cpuMs);
      else this.options.chargeMappingCpu?.(entry, cpuMs);
    };
    let result: MappingResult;
    try {
      result = await mapping.evaluate(body, json, entry.namespace);
    } catch (err) {
      if (err instanceof MappingBusy) {
        settle?.(0);
        throw mappingBusy(err.message, err.retryAfterSeconds);
      }
      const e = MappingError.from(err);
      pay(e.cpuMs ?? 0);
      const message = `the mapping (${mapping.label}) failed: ${e.describe()}`;
      throw new MappingFailure(e.guardrail ? 'guardrail' : 'evaluation', message, [{ field: '', message }]);
    }
    pay(result.cpuMs);
    return result;
  }

  /**
   * Where the integration's routing rules send each event (undefined: it has none), taken once for
   * a live request, a dry run and a replay alike and charged to the namespace's CPU
   * (routing/rule-decisions.ts).
   */
  decideRoutes(entry: RouteEntry, events: readonly NormalisedEvent[]): Promise<RuleDecision[] | undefined> {
    return this.options.routeDecider?.decide(entry, events) ?? decideHere(entry, events, undefined);
  }

  /**
   * A live request: events, or the payload kept in the dead letter and a 422 (503 if it cannot be
   * kept). Without a mapping there is no dead letter to keep: validation's answer, synchronously
   * (no promise: the single-event path pays for each one).
   */
  toEvents(
    body: unknown,
    entry: RouteEntry,
    ctx: EventContext,
    contentType?: string,
    json?: Uint8Array,
  ): NormalisedEvent[] | Promise<NormalisedEvent[]> {
    if (!entry.mapping) return parseEvents(body, this.options.eventsPerRequest, ctx);
    return this.mappedToEvents(body, entry, ctx, contentType, json);
  }

  private async mappedToEvents(
    body: unknown,
    entry: RouteEntry,
    ctx: EventContext,
    contentType?: string,
    json?: Uint8Array,
  ): Promise<NormalisedEvent[]> {
    try {
      return await this.map(body, entry, ctx, json);
    } catch (err) {
      if (!(err instanceof MappingFailure)) throw err;
      const labels = { integration: entry.name, namespace: entry.namespace };
      this.options.metrics.failures.inc({ ...labels, reason: err.reason });
      let id: string;
      try {
        id = await this.options.deadLetter.put({
          kind: 'mapping',
          ...labels,
          reason: err.message,
          errors: err.errors.slice(0, 20),
          ...(contentType ? { contentType } : {}),
          payload: body,
        });
      } catch (cause) {
        // Too large for any namespace's share: retrying cannot help, so the 422 says it was not kept (and it is counted).
        if (cause instanceof LetterTooLarge)
          throw mappingFailed(`${err.message}; the payload was not kept for replay: ${cause.message}`, err.errors);
        throw deadLetterFailed(
          `${err.message}; the payload could not be kept for replay (${(cause as Error).message}), so retry later`,
          err.errors,
          cause,
        );
      }
      this.options.metrics.deadLettered.inc(labels);
      throw mappingFailed(`${err.message}; the payload was kept for replay as dead letter ${id}`, err.errors, id);
    }
  }

  /** ?dryRun=true: the same steps, nothing accepted, kept or counted. */
  async dryRun(body: unknown, entry: RouteEntry, ctx: EventContext, json?: Uint8Array): Promise<DryRunResult> {
    const mapping = entry.mapping?.label ?? 'none';
    try {
      const events = await this.map(body, entry, ctx, json);
      return {
        success: true,
        dryRun: true,
        mapping,
        message: `dry run: ${events.length} event(s) would be accepted; nothing was accepted`,
        events,
        routing:
          (await this.decideRoutes(entry, events)) ??
          events.map(() => ({ matched: [], destinations: entry.destinations })),
      };
    } catch (err) {
      if (err instanceof MappingFailure)
        return { success: false, dryRun: true, mapping, message: `dry run: ${err.message}`, errors: err.errors };
      // A 503 (workers full) or a refusal over a per-tenant limit is the answer itself: the sender retries.
      if (err instanceof IntakeError && err.statusCode < 500 && !(err instanceof LimitError))
        return {
          success: false,
          dryRun: true,
          mapping,
          message: `dry run: ${err.message}`,
          errors: err.fieldErrors ?? [],
        };
      throw err;
    }
  }
}
