/**
 * Activity: what each integration and API key received, as an ingester replica reports it on its
 * admin port (`GET /status/activity`) and as the operator writes it, merged across replicas, to
 * `status.activity` of WebhookIntegration and ApiKey (docs/activity.md). This module is the only
 * definition of both shapes; the ingester and the operator share it.
 *
 * A refusal's `reason` is an open set of short snake_case words (`unauthorized`, `invalid`,
 * `mapping`, `suspended`, `rate_limited`, `sink_unavailable`, `too_large`, ...): a new kind of
 * refusal gets its own reason without a change here, so readers must accept any string.
 */

/** The last refusals of authenticated requests kept, per replica and merged. */
export const RECENT_REFUSALS = 10;
/**
 * Senders refused before they proved credentials, kept apart (one slot per address and reason,
 * per replica and merged): a stranger fills these, never the RECENT_REFUSALS slots.
 */
export const UNAUTHENTICATED_SENDERS = 5;
/** Longest message, address and User-Agent kept in a refusal (characters, after escaping). */
export const MAX_REFUSAL_TEXT = 256;
/** Distinct reasons counted per integration or key; further ones count under `other`. */
export const MAX_REASONS = 16;
export const OTHER_REASON = 'other';

/**
 * One refused request that had proved its credentials: never its credentials, never its body.
 * Every text is inert (common/sender-text.ts: control and format characters escaped) and at most
 * MAX_REFUSAL_TEXT long.
 */
export interface RecentRefusal {
  /** RFC 3339. */
  time: string;
  /** The HTTP status answered. */
  status: number;
  /** The error catalogue's code (UNAUTHORIZED, MAPPING_FAILED, ...). */
  code: string;
  reason: string;
  message: string;
  /** The sender's address as the ingester saw it (X-Forwarded-For only from a trusted proxy). */
  remoteAddress: string;
  /** The User-Agent header as the sender sent it: the sender's claim, never intake's words. */
  userAgent: string;
  /** A mapping refusal kept as a dead letter: its id (`intake deadletter list --id`). */
  deadLetterId?: string;
}

/**
 * Requests refused before they proved any credentials (a wrong password or signature, an unknown
 * integration, a blocked address, anything refused before authentication ran), from one address
 * for one reason. Anyone can send those, so nothing the sender wrote is kept: no User-Agent, no
 * message (the code and reason are intake's own words), only the address and a count.
 */
export interface UnauthenticatedSender {
  /** The sender's address as the ingester saw it (X-Forwarded-For only from a trusted proxy). */
  remoteAddress: string;
  reason: string;
  /** The last refusal's HTTP status and error code. */
  status: number;
  code: string;
  /** Refusals from this address for this reason since firstTime (summed across replicas). */
  count: number;
  /** RFC 3339: the first and the last of them. */
  firstTime: string;
  lastTime: string;
}

/** Minutes kept in ActivityMinutes: the last hour. */
export const ACTIVITY_MINUTES = 60;

/**
 * Events accepted and requests refused in each minute of the last hour, for charts. Anchored on
 * wall-clock minutes, not on "now": the arrays start at the first minute of the hour that had
 * anything and end at the last one, so a quiet integration's status does not change every minute
 * (a minute with nothing after `start` is a 0; minutes after the last are 0 too).
 */
export interface ActivityMinutes {
  /** RFC 3339, a whole minute: the minute events[0] and refused[0] count. */
  start: string;
  /** Events (WebhookIntegration) or data points (ApiKey) accepted in each minute from `start`. */
  events: number[];
  /** Requests refused in each minute from `start`, every reason together. */
  refused: number[];
}

/** `status.activity`: exactly what the operator writes and the console reads. */
export interface Activity {
  /** RFC 3339; absent if never. */
  lastEventTime?: string;
  /** RFC 3339; absent if never. */
  lastRefusalTime?: string;
  /** Events (WebhookIntegration) or data points (ApiKey) accepted over the last hour. */
  eventsLastHour: number;
  /** Of eventsLastHour, those a routing rule dropped (drop: true); absent when none. */
  droppedByRuleLastHour?: number;
  /** Requests refused over the last hour: the total of refusalsLastHour. */
  refusedLastHour: number;
  /** Requests refused over the last hour, by reason. */
  refusalsLastHour: Record<string, number>;
  /** Per minute over the last hour; absent when the hour had nothing. */
  minutes?: ActivityMinutes;
  /** Refusals of authenticated requests, newest first, at most RECENT_REFUSALS. */
  recentRefusals: RecentRefusal[];
  /**
   * Refusals before authentication, by address and reason, last seen first, at most
   * UNAUTHENTICATED_SENDERS (absent when there are none).
   */
  unauthenticatedSenders?: UnauthenticatedSender[];
  /** RFC 3339: when the operator last merged what the replicas reported. */
  updatedTime?: string;
}

/** One integration or key in a replica's report: its identity in the route contract, and its activity. */
export interface ReportedActivity extends Omit<Activity, 'updatedTime'> {
  /** The route's name: the integration name (the URL suffix after webhook_), or the API key's route name. */
  name: string;
  namespace: string;
}

/** `GET /status/activity` of one ingester replica. */
export interface ActivityReport {
  /** RFC 3339: when the report was made. */
  time: string;
  /** Integrations and keys with any activity since this replica started (quiet ones are left out). */
  webhookIntegrations: ReportedActivity[];
  apiKeys: ReportedActivity[];
  /**
   * Refusals that name no published integration or key (an unknown integration name, an API key
   * that matches none): one bucket per endpoint, never one per sender.
   */
  unattributed: { webhookIntegrations: Omit<Activity, 'updatedTime'>; apiKeys: Omit<Activity, 'updatedTime'> };
}
