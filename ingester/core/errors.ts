/**
 * The catalogue of client-visible errors (after fastify lib/errors.js): each has a stable code and
 * an HTTP status, and is rendered as the JSON body `{"success":false,"message":...}` plus, for
 * validation failures, `errors: [{index, field, message}]`.
 *
 * A message or field may quote what the sender sent (a body's key, a content type, a mapping's
 * `$error` text); the answer is also recorded in the integration's activity, which people read on
 * terminals and in kubectl: so every message and field error is made inert when the error is built
 * (common/sender-text.ts: control and format characters escaped).
 */
import { inertText, isInert } from '../../common/sender-text.js';

export interface FieldError {
  /** Position in the batch; absent when the problem is the request as a whole. */
  index?: number;
  field: string;
  message: string;
}

/** Field errors with every field and message inert; the same array when they already are. */
export function inertFieldErrors(errors: FieldError[]): FieldError[] {
  if (errors.every((e) => isInert(e.field) && isInert(e.message))) return errors;
  return errors.map((e) => ({ ...e, field: inertText(e.field), message: inertText(e.message) }));
}

export class IntakeError extends Error {
  readonly fieldErrors?: FieldError[];

  constructor(
    readonly code: string,
    readonly statusCode: number,
    message: string,
    fieldErrors?: FieldError[],
    readonly headers?: Record<string, string>,
    options?: { cause?: unknown },
  ) {
    // A client-visible error is an answer, not a fault: its stack is never shown or logged, and
    // capturing one was the largest single cost of a refusal (a sender far over its rate limit
    // makes thousands a second). A cause keeps its own stack.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(inertText(message), options);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'IntakeError';
    if (fieldErrors) this.fieldErrors = inertFieldErrors(fieldErrors);
  }

  /** renderedBody's memo: an error's answer does not change once it is built. */
  private rendered: string | undefined;

  /**
   * The answer's body as JSON, rendered once per error: a refusal the limiter reuses (a sender far
   * over its limit gets the same one thousands of times a second) is serialised once, not per
   * request. The same bytes as JSON.stringify(toBody()), which is what fastify would send.
   */
  renderedBody(): string {
    if (this.rendered === undefined) this.rendered = JSON.stringify(this.toBody());
    return this.rendered;
  }

  toBody(): { success: false; message: string; code: string; errors?: FieldError[] } {
    const body: { success: false; message: string; code: string; errors?: FieldError[] } = {
      success: false,
      message: this.message,
      code: this.code,
    };
    if (this.fieldErrors) body.errors = this.fieldErrors;
    return body;
  }
}

const BASIC_CHALLENGE = { 'www-authenticate': 'Basic realm="intake", charset="UTF-8"' };

/** One body for unknown integration, unknown user and wrong password: nothing is revealed. */
export const unauthorized = (): IntakeError =>
  new IntakeError('UNAUTHORIZED', 401, 'missing or invalid credentials', undefined, BASIC_CHALLENGE);

export const unauthorizedApiKey = (): IntakeError =>
  new IntakeError(
    'UNAUTHORIZED',
    401,
    'missing or invalid API key (header apiKey, or Basic <username>:<key>)',
    undefined,
    BASIC_CHALLENGE,
  );

/**
 * Why authentication refused a request: the label of intake_auth_failures_total and what activity
 * counts. `missing`/`invalid`: Basic credentials or API key absent / wrong (unknown integration
 * included); `signature_missing`: before the body is read, a signed integration's signature header
 * absent, repeated, empty or too long, or its id or timestamp header absent, repeated or malformed;
 * `signature_invalid`: no signature matches the body under a current secret (a signature value
 * not of the scheme's form included: auth/signature-check.ts drops it, and then none matches);
 * `timestamp_out_of_range`: the signed timestamp is outside the tolerance (a stale request, or an old one sent again).
 */
export type AuthFailureReason =
  'missing' | 'invalid' | 'signature_missing' | 'signature_invalid' | 'timestamp_out_of_range';

/**
 * A refused authentication: the answer the sender gets (the 401, or the 429 once its address is
 * blocked), which says nothing of the reason, and the reason, for metrics and activity only.
 */
export class AuthRefusal extends IntakeError {
  constructor(
    readonly reason: AuthFailureReason,
    answer: IntakeError,
  ) {
    super(answer.code, answer.statusCode, answer.message, answer.fieldErrors, answer.headers);
    this.name = 'AuthRefusal';
  }
}

export const suspended = (kind: string, name: string): IntakeError =>
  new IntakeError('SUSPENDED', 403, `${kind} ${name} is suspended`);

export const authThrottled = (retryAfterSeconds: number): IntakeError =>
  new IntakeError(
    'AUTH_THROTTLED',
    429,
    `too many failed authentication attempts from this address; retry after ${retryAfterSeconds}s`,
    undefined,
    {
      'retry-after': String(retryAfterSeconds),
    },
  );

/** Longest field path a field error names: the longest tag name a data point may have. */
export const MAX_FIELD_CHARS = 128;

/**
 * A field error names its field, and never quotes a value; but a field's path is made of the
 * body's own keys (an unknown field, a tag, a path into custom_info), so a long one is cut: the
 * answer is recorded in the integration's activity, which anyone who may view the resource reads.
 * Escaped before it is cut, so the bound holds for the text shown.
 */
const boundedField = (e: FieldError): FieldError =>
  e.field.length <= MAX_FIELD_CHARS && isInert(e.field) ? e : { ...e, field: inertText(e.field, MAX_FIELD_CHARS) };

/** `count` may exceed errors.length when the list was cut short; the message says so. */
export const invalidBatch = (noun: string, errors: FieldError[], total: number, count = errors.length): IntakeError =>
  new IntakeError(
    'INVALID_BODY',
    400,
    `${count === 1 ? '1 problem' : `${count} problems`} in the request` +
      (count > errors.length ? ` (the first ${errors.length} are listed)` : '') +
      `; none of the ${total} ${noun}(s) was accepted`,
    errors.map(boundedField),
  );

export const badHeader = (header: string, message: string): IntakeError =>
  new IntakeError('BAD_HEADER', 400, message, [{ field: `header:${header}`, message }]);

export const invalidJson = (message: string): IntakeError =>
  new IntakeError('INVALID_JSON', 400, message, [{ field: '', message }]);

export const jsonTooDeep = (maxDepth: number): IntakeError => {
  const message = `the body nests objects or arrays deeper than ${maxDepth} levels (limits.maxJsonDepth); no event or tool payload needs that`;
  return new IntakeError('JSON_TOO_DEEP', 400, message, [{ field: '', message }]);
};

export const unsupportedMediaType = (contentType: string | undefined): IntakeError =>
  new IntakeError(
    'UNSUPPORTED_MEDIA_TYPE',
    415,
    `unsupported content type ${contentType ? JSON.stringify(contentType.slice(0, 100)) : '(none)'}: send application/json, application/*+json, or text/plain holding JSON`,
  );

export const payloadTooLarge = (limitBytes: number): IntakeError =>
  new IntakeError('PAYLOAD_TOO_LARGE', 413, `request body exceeds the limit of ${limitBytes} bytes`);

/** More data points in one request than the whole remote write queue holds: a 503 would be retried for ever. */
export const largerThanRemoteWriteQueue = (
  points: number,
  bytes: number,
  maxQueuedBytesPerTenant: number,
): IntakeError =>
  new IntakeError(
    'PAYLOAD_TOO_LARGE',
    413,
    `these ${points} data points would take ${bytes} bytes of the remote write queue, more than a namespace's whole share of it (remoteWrite.maxQueuedBytesPerTenant ${maxQueuedBytesPerTenant}); send fewer points per request`,
  );

/** The `limit` object of a refusal for want of room in the remote write queue. */
export interface QueueLimit {
  /** `namespace`: the namespace's own share is full (its receiver is failing); `replica`: the whole queue. */
  scope: 'namespace' | 'replica';
  namespace: string;
  resource: 'bytes' | 'samples';
  /** What is queued now (the namespace's, or the whole queue's), the bound, and what the request needs. */
  queued: number;
  max: number;
  requested: number;
  retryAfterSeconds: number;
  /** The setting that raises the bound. */
  field: string;
}

/** No room in the remote write queue for these points: nothing was accepted. */
export class QueueFullError extends IntakeError {
  constructor(readonly limit: QueueLimit) {
    const whose =
      limit.scope === 'namespace'
        ? `namespace ${limit.namespace}'s share of the remote write queue is full`
        : 'the remote write queue is full for every namespace';
    super(
      'REMOTE_WRITE_QUEUE_FULL',
      503,
      `${whose} (${limit.queued} of ${limit.max} ${limit.resource} waiting for the receiver, ${limit.field}); nothing was accepted, retry after ${limit.retryAfterSeconds}s`,
      undefined,
      { 'retry-after': String(limit.retryAfterSeconds) },
    );
  }

  override toBody(): ReturnType<IntakeError['toBody']> & { limit: QueueLimit } {
    return { ...super.toBody(), limit: this.limit };
  }
}

export const remoteWriteQueueFull = (limit: QueueLimit): QueueFullError => new QueueFullError(limit);

export const unsupportedContentEncoding = (name: string): IntakeError =>
  new IntakeError(
    'UNSUPPORTED_MEDIA_TYPE',
    415,
    `unsupported content encoding ${JSON.stringify(name.slice(0, 50))}: send gzip, deflate or an uncompressed body`,
  );

export const invalidIdempotencyKey = (message: string): IntakeError =>
  new IntakeError('INVALID_IDEMPOTENCY_KEY', 400, `header Idempotency-Key ${message}`, [
    { field: 'Idempotency-Key', message },
  ]);

/** Answered by the HTTP server itself, before fastify sees the request (http/guards.ts clientErrorHandler). */
export const requestTimeout = (): IntakeError =>
  new IntakeError('REQUEST_TIMEOUT', 408, 'the request was not received in time; nothing of it was accepted');
/** The body kept arriving slower than the minimum upload rate (http/upload-rate.ts): cut, as a timeout is. */
export const bodyTooSlow = (minBytesPerSecond: number): IntakeError =>
  new IntakeError(
    'REQUEST_TIMEOUT',
    408,
    `the request body arrived slower than limits.minBodyBytesPerSecond (${minBytesPerSecond} bytes/s); nothing of it was accepted`,
  );

/** Which budget of request bodies being received at once refused a body (http/body-admission.ts). */
export interface BodyBytesLimit {
  /** `address`, `integration`, `unauthenticated`: bodies read before their sender is known; `namespace`, `replica`: after. */
  scope: 'address' | 'integration' | 'unauthenticated' | 'namespace' | 'replica';
  /** The ingester setting that bounds it. */
  setting: string;
  maxBytes: number;
  retryAfterSeconds: number;
}

/** A body could not reserve its bytes: refused before any of it was read, nothing accepted. */
export class BodyBytesLimitError extends IntakeError {
  constructor(
    statusCode: number,
    message: string,
    readonly limit: BodyBytesLimit,
  ) {
    super('BODY_BYTES_LIMITED', statusCode, message, undefined, { 'retry-after': String(limit.retryAfterSeconds) });
  }

  override toBody(): ReturnType<IntakeError['toBody']> & { limit: BodyBytesLimit } {
    return { ...super.toBody(), limit: this.limit };
  }
}

export const headersTooLarge = (): IntakeError =>
  new IntakeError('HEADERS_TOO_LARGE', 431, 'the request headers are too large');
export const malformedRequest = (): IntakeError => new IntakeError('BAD_REQUEST', 400, 'malformed HTTP request');

/** Any other 4xx fastify raises, with its message; anything else is an internal error, with none. */
export const badRequest = (statusCode: number, message: string): IntakeError =>
  new IntakeError('BAD_REQUEST', statusCode, message);
export const internalError = (): IntakeError =>
  new IntakeError('INTERNAL', 500, 'internal error; the request was not accepted');

/** A mapped payload gave no valid events: 422, with the dead letter's id when it was kept. */
export const mappingFailed = (message: string, errors: FieldError[], deadLetterId?: string): IntakeError =>
  new IntakeError(
    'MAPPING_FAILED',
    422,
    message,
    errors,
    deadLetterId ? { 'x-intake-dead-letter-id': deadLetterId } : undefined,
  );

/**
 * An integration's routing rules could not decide for this request's events within their CPU time
 * limit (their regular expressions on these values cost too much): nothing was accepted, and the
 * same events would fail again, so 422; the tenant's rules (or smaller requests) are the remedy.
 */
export const routingRulesFailed = (message: string): IntakeError =>
  new IntakeError('ROUTING_RULES_FAILED', 422, message);

/** A mapping failure that could not be kept as a dead letter: the sender retries later. */
export const deadLetterFailed = (message: string, errors: FieldError[], cause: unknown): IntakeError =>
  new IntakeError('DEAD_LETTER_FAILED', 503, message, errors, { 'retry-after': '30' }, { cause });

export const seriesLimit = (message: string): IntakeError => new IntakeError('SERIES_LIMIT', 429, message);

export const notFound = (method: string, url: string): IntakeError =>
  new IntakeError('NOT_FOUND', 404, `no route for ${method} ${url.slice(0, 200)}`);

export const methodNotAllowed = (method: string, allow: string): IntakeError =>
  new IntakeError('METHOD_NOT_ALLOWED', 405, `method ${method} not allowed; use ${allow}`, undefined, { allow });

// The admin listener's request checks (http/admin-guard.ts): a Host it does not answer for (DNS
// rebinding), and a state-changing call without what a cross-site page cannot send.
export const ADMIN_WRITE_HEADER = 'X-Intake-Admin';
export const hostNotAllowed = (host: string | undefined): IntakeError =>
  new IntakeError(
    'HOST_NOT_ALLOWED',
    421,
    `the admin listener does not answer for Host ${host ? JSON.stringify(host.slice(0, 100)) : '(none)'}: use an IP address, localhost or a name in adminAllowedHosts`,
  );
export const adminHeaderRequired = (): IntakeError =>
  new IntakeError(
    'ADMIN_HEADER_REQUIRED',
    403,
    `a state-changing admin call needs the header ${ADMIN_WRITE_HEADER}: true and a JSON object body with Content-Type: application/json`,
  );
export const adminJsonRequired = (contentType: string | undefined): IntakeError =>
  new IntakeError(
    'UNSUPPORTED_MEDIA_TYPE',
    415,
    `a state-changing admin call needs a JSON object body with Content-Type: application/json, got ${contentType ? JSON.stringify(contentType.slice(0, 100)) : 'no Content-Type'}`,
  );

export const unavailable = (message: string, retryAfterSeconds = 5): IntakeError =>
  new IntakeError('UNAVAILABLE', 503, message, undefined, { 'retry-after': String(retryAfterSeconds) });

/** Which limit on a replica's bulk replays of dead letters refused a start (dead-letters/bulk-replay-slots.ts). */
export interface BulkReplayLimit {
  /**
   * `namespace`: one per namespace; `platform`: one replay of all namespaces at a time; `replica`:
   * the namespaces' running at once; `exclusive`: the replay of all namespaces runs alone.
   */
  scope: 'namespace' | 'platform' | 'replica' | 'exclusive';
  /** The ingester setting that bounds it (absent: fixed). */
  setting?: string;
  /** How many run at once within that scope. */
  max: number;
}

/** A bulk replay could not take its slot: refused before it read anything; the body names the limit. */
export class BulkReplayLimitError extends IntakeError {
  constructor(
    code: string,
    message: string,
    readonly limit: BulkReplayLimit,
    retryAfterSeconds: number,
  ) {
    super(code, 429, message, undefined, { 'retry-after': String(retryAfterSeconds) });
  }

  override toBody(): ReturnType<IntakeError['toBody']> & { limit: BulkReplayLimit } {
    return { ...super.toBody(), limit: this.limit };
  }
}

/**
 * A bulk replay of dead letters is running in the same slot: one per namespace, and one of all
 * namespaces (the platform's). Its id is named: a replay in the same slot is of the same namespace.
 */
export const bulkReplayRunning = (
  namespace: string | undefined,
  runningId: string,
  retryAfterSeconds: number,
): IntakeError =>
  namespace === undefined
    ? new BulkReplayLimitError(
        'BULK_REPLAY_RUNNING',
        `a bulk replay of all namespaces (${runningId}) is running on this replica, and one runs at a time: wait for it, or cancel it`,
        { scope: 'platform', max: 1 },
        retryAfterSeconds,
      )
    : new BulkReplayLimitError(
        'BULK_REPLAY_RUNNING',
        `a bulk replay of namespace ${namespace} (${runningId}) is running on this replica, and one runs per namespace: wait for it, or cancel it`,
        { scope: 'namespace', max: 1 },
        retryAfterSeconds,
      );

/** As many namespaces' bulk replays run as the replica allows (deadLetter.bulkReplay.maxRunning); none is named. */
export const bulkReplayReplicaFull = (maxRunning: number, retryAfterSeconds: number): IntakeError =>
  new BulkReplayLimitError(
    'BULK_REPLAY_REPLICA_FULL',
    `${maxRunning} namespaces' bulk replays are running on this replica, the most that run at once (deadLetter.bulkReplay.maxRunning): try again later`,
    { scope: 'replica', setting: 'deadLetter.bulkReplay.maxRunning', max: maxRunning },
    retryAfterSeconds,
  );

/** With deadLetter.bulkReplay.allNamespaces: exclusive, a replay of all namespaces runs alone on the replica. */
export const bulkReplayExclusive = (
  why: 'running' | 'waiting',
  retryAfterSeconds: number,
  namespaces = 0,
): IntakeError =>
  new BulkReplayLimitError(
    'BULK_REPLAY_EXCLUSIVE',
    why === 'running'
      ? "the platform's bulk replay of all namespaces is running on this replica and runs alone there (deadLetter.bulkReplay.allNamespaces: exclusive): try again later"
      : `a bulk replay of all namespaces runs alone on this replica (deadLetter.bulkReplay.allNamespaces: exclusive), and ${namespaces} namespaces' bulk replays are running: wait for them, or cancel them (GET /deadletter/replays lists them)`,
    { scope: 'exclusive', setting: 'deadLetter.bulkReplay.allNamespaces', max: 1 },
    retryAfterSeconds,
  );

/** The mapping workers' queue is full (count or bytes): nothing is wrong with the payload. */
export const mappingBusy = (message: string, retryAfterSeconds: number): IntakeError =>
  new IntakeError('MAPPING_BUSY', 503, message, undefined, { 'retry-after': String(retryAfterSeconds) });

export const sinkFailed = (sink: string, cause: unknown): IntakeError =>
  new IntakeError(
    'SINK_FAILED',
    503,
    `event sink ${sink} failed; nothing was acknowledged, retry later`,
    undefined,
    { 'retry-after': '5' },
    { cause },
  );

/**
 * While the bus is down, a namespace's events in the spool reached its share
 * (`spool.maxBytesPerNamespace`): this namespace is refused, the others are not.
 */
export const spoolShareFull = (
  namespace: string,
  maxBytes: number,
  acknowledged: number,
  events: number,
): IntakeError =>
  new IntakeError(
    'SPOOL_SHARE_FULL',
    503,
    `the bus is not taking events and namespace ${namespace} holds its share of this replica's spool ` +
      `(spool.maxBytesPerNamespace, ${maxBytes} bytes); ${acknowledged} of ${events} events reached the bus, ` +
      'retry the request later (the same ids are stored once)',
    undefined,
    { 'retry-after': '5' },
  );

/**
 * Without the bus, a namespace's events waiting in the outbox (its destinations are not taking
 * them) reached its share (`spool.maxBytesPerNamespace`): this namespace is refused, the others are not.
 */
export const outboxShareFull = (namespace: string, maxBytes: number, held: number): IntakeError =>
  new IntakeError(
    'OUTBOX_SHARE_FULL',
    503,
    `namespace ${namespace} holds its share of this replica's outbox (spool.maxBytesPerNamespace, ${maxBytes} bytes; ` +
      `${held} held): its destinations are not taking events as fast as they arrive; retry the request later`,
    undefined,
    { 'retry-after': '5' },
  );

export type LimitScope = 'integration' | 'apikey' | 'namespace';
export type LimitResource = 'events' | 'dataPoints' | 'mappingCpuMillis';

/** The `limit` object of a refusal over a per-tenant limit: which one, its values, and what raises it. */
export interface LimitDetails {
  scope: LimitScope;
  namespace: string;
  /** The integration, API key or namespace the limit belongs to. */
  name: string;
  resource: LimitResource;
  /** Cluster-wide values; each of `replicas` ready replicas enforces its share. */
  perSecond: number;
  burst: number;
  replicas: number;
  /** Events or data points in the request (1 when refused before the body was read, and for mapping CPU). */
  requested: number;
  retryAfterSeconds: number;
  /** The setting that raises the limit. */
  field: string;
}

const LIMIT_NOUNS: Record<LimitResource, string> = {
  events: 'events/s',
  dataPoints: 'data points/s',
  mappingCpuMillis: 'mapping CPU ms/s',
};

/** Over a per-tenant limit: nothing of the request was accepted. 429, or 503 for senders that retry only server errors. */
export class LimitError extends IntakeError {
  constructor(
    statusCode: number,
    readonly limit: LimitDetails,
  ) {
    const of =
      limit.scope === 'namespace'
        ? `namespace ${limit.namespace}`
        : `${limit.scope === 'apikey' ? 'API key' : 'integration'} ${limit.name} (namespace ${limit.namespace})`;
    super(
      limit.resource === 'mappingCpuMillis' ? 'MAPPING_CPU_LIMITED' : 'RATE_LIMITED',
      statusCode,
      `${LIMIT_NOUNS[limit.resource]} limit of ${of} reached: ${limit.perSecond}/s, burst ${limit.burst}` +
        (limit.replicas > 1 ? ` (across ${limit.replicas} replicas)` : '') +
        `; nothing of this request was accepted, retry after ${limit.retryAfterSeconds}s. To raise it: ${limit.field}`,
      undefined,
      { 'retry-after': String(limit.retryAfterSeconds) },
    );
  }

  override toBody(): ReturnType<IntakeError['toBody']> & { limit: LimitDetails } {
    return { ...super.toBody(), limit: this.limit };
  }
}

export const rateLimited = (statusCode: number, limit: LimitDetails): LimitError => new LimitError(statusCode, limit);
