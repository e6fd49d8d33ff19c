/**
 * The dead letters, both kinds, on the admin listener (never public: they are tenants' data):
 *   GET  /deadletter[?kind=mapping|delivery][&namespace=][&integration=][&destination=][&id=A,B][&limit=N][&payload=true]
 *        what is kept, with the store's usage per namespace (bodies only with payload=true)
 *   POST /deadletter/replay[?same filters]   body: a JSON object, {} or the same filters
 *        replays each selected letter once (claimed first, so concurrent replays never repeat one):
 *        a mapping failure through its integration's current mapping, a delivery failure back to its
 *        destination; replayed ones leave the store, failed ones stay.
 *        Like every state-changing admin call it needs X-Intake-Admin: true and a JSON body
 *        (http/admin-guard.ts refuses it otherwise, before it gets here).
 *   POST /deadletter/replays[?same filters][&rate=N]   body: {} or the same filters
 *        starts a bulk replay in the background (bulk-replay.ts): 202 with its progress; 429 with
 *        Retry-After, naming the limit, while its namespace's slot (or the platform's, without a
 *        namespace filter) is taken (bulk-replay-slots.ts)
 *   GET  /deadletter/replays, GET /deadletter/replays/:id   progress (matched, replayed, failed, skipped, remaining)
 *   POST /deadletter/replays/:id/cancel   stops it before its next letter; answers its progress once stopped
 * Filters: kind, namespace, integration, destination, id, reason (exact, or a prefix ending in
 * `*`), since and until (an RFC 3339 time, or a duration such as 2h meaning that long ago).
 * `intake deadletter list|replay` calls these.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { DeadLetterMetrics } from './metrics.js';
import {
  DEAD_LETTER_KINDS,
  MAX_REASON_FILTER_CHARS,
  type DeadLetter,
  type DeadLetterKind,
  type DeadLetterQuery,
  type DeadLetterStore,
} from './model.js';
import { replayLetters, type DeadLetterReplayers } from './dead-letter-replay.js';
import { parseDuration } from '../../common/duration.js';
import { IntakeError } from '../core/errors.js';
import { BulkReplays, type BulkReplayFilter } from './bulk-replay.js';

export interface DeadLetterEndpointsOptions {
  store: DeadLetterStore;
  replayers: DeadLetterReplayers;
  metrics: DeadLetterMetrics;
  leaseMs: number;
  logger: Logger;
  /** The bulk replays (main.ts stops the running one at shutdown). */
  bulk: BulkReplays;
}

type Query = Partial<
  Record<
    | 'kind'
    | 'namespace'
    | 'integration'
    | 'destination'
    | 'id'
    | 'seq'
    | 'limit'
    | 'payload'
    | 'reason'
    | 'since'
    | 'until'
    | 'rate',
    string
  >
>;

const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 10_000;

export function registerDeadLetterEndpoints(app: FastifyInstance, o: DeadLetterEndpointsOptions): void {
  app.get<{ Querystring: Query }>('/deadletter', async (req, reply) => {
    const q = queryOf(req.query, reply);
    if (!q) return reply;
    const letters = await withStore(() => o.store.list(q), reply);
    if (!letters) return reply;
    const usage = o.store.usage();
    return {
      store: o.store.description,
      count: letters.length,
      bytes: usage.bytes,
      namespaces: Object.fromEntries(usage.namespaces),
      entries: req.query.payload === 'true' ? letters : letters.map(withoutBody),
    };
  });
  app.post<{ Querystring: Query }>('/deadletter/replay', async (req, reply) => {
    const merged = withBodyFilters(req.query, req.body, reply);
    const q = merged && queryOf(merged, reply);
    if (!q) return reply;
    return (await withStore(() => replayLetters(o.store, q, o.replayers, o.leaseMs, o.metrics), reply)) ?? reply;
  });
  registerBulkReplayEndpoints(app, o.bulk);
}

function registerBulkReplayEndpoints(app: FastifyInstance, bulk: BulkReplays): void {
  app.post<{ Querystring: Query }>('/deadletter/replays', async (req, reply) => {
    const merged = withBodyFilters(req.query, req.body, reply, BULK_FIELDS);
    const q = merged && queryOf(merged, reply);
    if (!q) return reply;
    let rate: number | undefined;
    if (merged.rate !== undefined) {
      rate = Number(merged.rate);
      if (!Number.isFinite(rate) || rate <= 0 || rate > bulk.maxRate)
        return reply.code(400).send({
          error: 'invalid_query',
          field: 'rate',
          message: `must be a number of letters a second, above 0 and at most ${bulk.maxRate} (deadLetter.bulkReplay.maxRate)`,
        });
    }
    const { limit: _l, seqs: _s, ...filter } = q;
    try {
      return reply.code(202).send(bulk.start(filter satisfies BulkReplayFilter, rate));
    } catch (err) {
      // A slot's refusal (429, Retry-After, naming the limit) is answered by the listener's error handler.
      if (err instanceof IntakeError) throw err;
      return reply.code(503).send({ error: 'unavailable', message: (err as Error).message });
    }
  });
  app.get('/deadletter/replays', async () => ({ replays: bulk.list() }));
  app.get<{ Params: { id: string } }>('/deadletter/replays/:id', async (req, reply) => {
    return bulk.get(req.params.id) ?? reply.code(404).send(noSuchReplay(req.params.id));
  });
  app.post<{ Params: { id: string } }>('/deadletter/replays/:id/cancel', async (req, reply) => {
    return (await bulk.cancel(req.params.id)) ?? reply.code(404).send(noSuchReplay(req.params.id));
  });
}

const noSuchReplay = (id: string): Record<string, string> => ({
  error: 'not_found',
  message: `no bulk replay ${id.slice(0, 64)} on this replica (the last 5 finished ones of each namespace are kept; another replica's are its own)`,
});

const withoutBody = (l: DeadLetter): Record<string, unknown> => {
  const { payload: _p, event, ...rest } = l as DeadLetter & { payload?: unknown; event?: { id: string } };
  return event ? { ...rest, eventId: event.id } : rest;
};

const FILTERS = [
  'kind',
  'namespace',
  'integration',
  'destination',
  'id',
  'seq',
  'limit',
  'reason',
  'since',
  'until',
] as const;
/** A bulk replay takes every letter its filters select (no limit, no seq) and a pace. */
const BULK_FIELDS = [...FILTERS.filter((f) => f !== 'seq' && f !== 'limit'), 'rate'] as const;

/**
 * A replay's filters from its query string and its JSON body together. A body field that is no
 * filter is refused rather than ignored: `{"kind":"mapping"}` misspelt must not replay everything.
 */
function withBodyFilters(
  query: Query,
  body: unknown,
  reply: FastifyReply,
  fields: readonly string[] = FILTERS,
): Query | undefined {
  const fail = (field: string, message: string): undefined =>
    void reply.code(400).send({ error: 'invalid_query', field, message });
  const out: Query = { ...query };
  for (const key of Object.keys(query))
    if (!fields.includes(key)) return fail(key, `not a filter here; the query holds only ${fields.join(', ')}`);
  for (const [key, value] of Object.entries((body ?? {}) as Record<string, unknown>)) {
    if (!fields.includes(key)) return fail(key, `not a filter; the body holds only ${fields.join(', ')}`);
    if (typeof value !== 'string' && typeof value !== 'number') return fail(key, 'must be a string or a number');
    const given = query[key as keyof Query];
    if (given !== undefined && given !== String(value))
      return fail(key, 'given twice, in the query and in the body, with different values');
    out[key as keyof Query] = String(value);
  }
  return out;
}

function queryOf(q: Query, reply: FastifyReply): DeadLetterQuery | undefined {
  const fail = (field: string, message: string): undefined =>
    void reply.code(400).send({ error: 'invalid_query', field, message });
  const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    return fail('limit', `must be an integer 1..${MAX_LIMIT}`);
  const out: DeadLetterQuery = { limit };
  if (q.kind !== undefined) {
    if (!(DEAD_LETTER_KINDS as readonly string[]).includes(q.kind))
      return fail('kind', `must be one of ${DEAD_LETTER_KINDS.join(', ')}`);
    out.kind = q.kind as DeadLetterKind;
  }
  for (const key of ['namespace', 'integration', 'destination'] as const) {
    const v = q[key];
    if (v === undefined) continue;
    if (v === '' || v.length > 253) return fail(key, 'must be a name of 1..253 characters');
    out[key] = v;
  }
  if (q.id !== undefined) {
    const ids = q.id.split(',').filter(Boolean);
    if (ids.length === 0 || ids.length > MAX_LIMIT)
      return fail('id', `must be 1..${MAX_LIMIT} ids separated by commas`);
    out.ids = ids;
  }
  if (q.seq !== undefined) {
    const seqs = q.seq.split(',').map(Number);
    if (seqs.length === 0 || seqs.some((n) => !Number.isInteger(n) || n < 1))
      return fail('seq', 'must be positive integers separated by commas');
    out.seqs = seqs;
  }
  if (q.reason !== undefined) {
    if (q.reason === '' || q.reason.length > MAX_REASON_FILTER_CHARS)
      return fail('reason', `must be 1..${MAX_REASON_FILTER_CHARS} characters (a prefix ends in *)`);
    out.reason = q.reason;
  }
  for (const key of ['since', 'until'] as const) {
    const v = q[key];
    if (v === undefined) continue;
    const ms = timeOf(v);
    if (ms === undefined)
      return fail(key, 'must be an RFC 3339 time (2026-01-31T12:00:00Z) or a duration ago (90m, 2h)');
    out[key] = ms;
  }
  if (out.since !== undefined && out.until !== undefined && out.since >= out.until)
    return fail('until', 'must be after since');
  return out;
}

/** An RFC 3339 time, or a Go-style duration meaning that long before now; epoch ms. */
function timeOf(value: string): number | undefined {
  if (/^\d+(\.\d+)?(ms|s|m|h)/.test(value)) {
    try {
      return Date.now() - parseDuration(value);
    } catch {
      return undefined;
    }
  }
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

async function withStore<T>(run: () => Promise<T>, reply: FastifyReply): Promise<T | undefined> {
  try {
    return await run();
  } catch (err) {
    void reply.code(503).send({ error: 'unavailable', message: (err as Error).message });
    return undefined;
  }
}
