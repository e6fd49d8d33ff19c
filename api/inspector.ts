/**
 * The event inspector's contract (docs/inspector.md): what the ingester keeps of one request to an
 * integration that enabled it (spec.inspect), as the admin port, the CLI and the console show it.
 */

/** Requests kept per integration unless spec.inspect.requests says otherwise, and the most it may ask for. */
export const DEFAULT_INSPECT_REQUESTS = 50;
export const MAX_INSPECT_REQUESTS = 200;

/** Where the integration's routing sent one event. */
export interface CapturedRouting {
  /** The rules that matched (name, else index), in order; empty: none, the integration's destinations. */
  matched: string[];
  destinations: string[];
  /** The drop rule that stopped it, when one did. */
  droppedBy?: string;
}

/** One delivery attempt of one captured event to one destination, recorded by the delivering replica. */
export interface DeliveryAttempt {
  /** The index of the event in the request's events. */
  event: number;
  destination: string;
  /** When the attempt ended (RFC 3339). */
  at: string;
  /** The receiver's status code; absent when no answer came (connection refused, timed out). */
  status?: number;
  latencyMs: number;
  /** delivered, or what happens next: retried later, or kept as a dead letter. */
  outcome: 'delivered' | 'retry' | 'dead-letter';
  /** The problem, when it failed (sender text of the receiver's, cleaned). */
  error?: string;
}

/** One request as kept. */
export interface CapturedRequest {
  /** Unique across replicas; sortable by time. */
  id: string;
  namespace: string;
  integration: string;
  /** When it was received (RFC 3339). */
  receivedAt: string;
  /** The sender's address as the ingester saw it (after trustProxy). */
  remoteAddress: string;
  status: number;
  /** The refusal's catalogue code and message, when it was refused. */
  refusal?: { code: string; message: string };
  /** The request's headers, without credentials, signatures and cookies. */
  headers: Record<string, string>;
  /** The body as received (Content-Encoding undone), as UTF-8 text, cut to the inspector's body cap. */
  body: string;
  /** The body was longer than the cap: `body` holds its start only. */
  bodyTruncated: boolean;
  /** The body's full length in bytes. */
  bodyBytes: number;
  /** The events the body became after the mapping (absent: it never got that far). */
  events?: unknown[];
  /** More events than the inspector's cap: `events` holds the first ones only. */
  eventsTruncated?: boolean;
  /** Per event, in order: which rules matched and which destinations it goes to. */
  routing?: CapturedRouting[];
  /** Delivery attempts, per event and destination, oldest first. */
  attempts?: DeliveryAttempt[];
}

/** The list view: a request without its body and events. */
export type CapturedRequestSummary = Omit<CapturedRequest, 'headers' | 'body' | 'events' | 'routing' | 'attempts'> & {
  eventCount: number;
};

export function summaryOf(r: CapturedRequest): CapturedRequestSummary {
  const { headers: _h, body: _b, events, routing: _r, attempts: _a, ...rest } = r;
  return { ...rest, eventCount: events?.length ?? 0 };
}

/**
 * Headers never kept: credentials, signatures and cookies, by name or by what their name says
 * (a tool's own token header is as secret as Authorization). The route's configured signature
 * header is removed too (ingester/inspector/capture.ts), whatever it is called.
 */
const SECRET_HEADER = /authorization|cookie|signature|token|secret|api[-_]?key|password|credential/i;

export function isSecretHeader(name: string): boolean {
  return SECRET_HEADER.test(name);
}
