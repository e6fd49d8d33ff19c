/** The intake.dev/v1alpha1 custom resources (crds/ holds their schemas), as TypeScript types. */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Activity } from '../activity.js';
import type { ApiKeyLimits, IntegrationLimits, NamespaceLimits, OverLimitStatus, RouteLimits } from '../limits.js';
import type { MappingSpec } from '../mapping/engine.js';
import type { AuthenticationMode } from '../route.js';
import type { RoutingRule } from '../routing-rules.js';
import type { SignatureSettings } from '../signatures.js';

export const GROUP = 'intake.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const ROTATE_ANNOTATION = 'intake.dev/rotate';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export interface CommonStatus {
  url?: string;
  credentialsSecret?: string;
  observedGeneration?: number;
  conditions?: Condition[];
  /** The limits in effect (cluster defaults, the namespace's IntakeQuota, spec.limits clamped by it), as published in the route. */
  effectiveLimits?: RouteLimits;
  /** What the ingester replicas received, merged by the operator (api/activity.ts, docs/activity.md). */
  activity?: Activity;
}

export interface WebhookIntegration {
  apiVersion: typeof API_VERSION;
  kind: 'WebhookIntegration';
  metadata: V1ObjectMeta;
  spec: {
    name?: string;
    suspend?: boolean;
    credentials?: {
      username?: string;
      secretRef?: { name: string };
      rotationGracePeriod?: string;
    };
    /** Basic credentials (default), an HMAC signature over the body, or both (docs/signatures.md). */
    authentication?: {
      mode?: AuthenticationMode;
      signature?: SignatureSpec;
    };
    mapping?: MappingSpec;
    /**
     * Destination names: the namespace's own Destinations and the platform's (configured in the
     * ingester); a Destination of the namespace wins over a platform one of the same name. Absent: the defaults.
     */
    destinations?: string[];
    /** Routing rules, in order: which destinations each event goes to (api/routing-rules.ts). */
    rules?: RoutingRule[];
    /** The event inspector: enabled, the last requests are kept for people allowed to inspect (docs/inspector.md). */
    inspect?: { enabled: boolean; requests?: number };
    /** Optional limits for this integration, at most what the namespace's IntakeQuota allows. */
    limits?: Partial<IntegrationLimits> & { overLimitStatus?: OverLimitStatus };
    /** A Go-style duration (1h, 15m): no event for longer gives condition Receiving=False, reason Silent. */
    expectEventsWithin?: string;
  };
  status?: CommonStatus & { integrationName?: string };
}

/** spec.authentication.signature: the route's settings, with a Secret reference and durations instead of secrets and seconds. */
export type SignatureSpec = Omit<SignatureSettings, 'secrets' | 'toleranceSeconds'> & {
  /** A Secret in the namespace holding the signing secret (key signingSecret unless `key`); absent: generated. */
  secretRef?: { name: string; key?: string };
  /** How far a signed timestamp may be from the ingester's clock (default 5m). */
  tolerance?: string;
  /** How long the previous signing secret keeps working after a rotation (default 0s). */
  rotationGracePeriod?: string;
};

export interface ApiKey {
  apiVersion: typeof API_VERSION;
  kind: 'ApiKey';
  metadata: V1ObjectMeta;
  spec?: {
    username?: string;
    maxSeries?: number;
    suspend?: boolean;
    rotationGracePeriod?: string;
    /** Optional limits for this key, at most what the namespace's IntakeQuota allows. */
    limits?: Partial<ApiKeyLimits> & { overLimitStatus?: OverLimitStatus };
  };
  status?: CommonStatus & { username?: string };
}

/**
 * Per-tenant limits of one namespace, written by cluster admins only (tenants' roles may read it):
 * `spec.namespace` replaces the cluster defaults for the namespace as a whole; `spec.integration`
 * and `spec.apiKey` are what any one integration or key in it gets, and the most its spec.limits
 * may ask for. Several quotas in a namespace: the smallest value of each field applies.
 */
export interface IntakeQuota {
  apiVersion: typeof API_VERSION;
  kind: 'IntakeQuota';
  metadata: V1ObjectMeta;
  spec?: {
    namespace?: Partial<NamespaceLimits>;
    integration?: Partial<IntegrationLimits>;
    apiKey?: Partial<ApiKeyLimits>;
  };
  status?: {
    observedGeneration?: number;
    conditions?: Condition[];
    /** The limits in effect in the namespace: this and every other quota there, over the cluster defaults. */
    effective?: { namespace: NamespaceLimits; integration: IntegrationLimits; apiKey: ApiKeyLimits };
    /** What the namespace's integrations and keys were given: their count and the sum of their effective rates. */
    used?: { integrations: number; apiKeys: number; eventsPerSecond: number; dataPointsPerSecond: number };
  };
}

/** A reference to a key of a Secret in the resource's own namespace (there is no namespace field, on purpose). */
export interface SecretKeyRef {
  name: string;
  key?: string;
}

/** Credentials and TLS material of a Destination's outgoing requests, all from Secrets of its namespace. */
export interface DestinationAuthSpec {
  /** HTTP Basic: the username here or in the Secret (key `username`), the password in the Secret (key `password` unless `key`). */
  basicAuth?: { username?: string; secretRef: SecretKeyRef };
  /** `Authorization: Bearer <token>`, the token in the Secret (key `token` unless `key`). */
  bearerToken?: { secretRef: SecretKeyRef };
  /** TLS: a Secret with `ca.crt` (the receiver's CA) and/or `tls.crt` + `tls.key` (a client certificate). */
  tls?: { secretRef?: { name: string }; insecureSkipVerify?: boolean };
}

/**
 * A team's own destination: an Alertmanager or an HTTP receiver the namespace's integrations may
 * name in spec.destinations and spec.rules (docs/destinations.md). The settings are those of a
 * platform destination (`destinations:` in the ingester's settings), with durations as Go-style
 * strings and credentials from Secrets of the same namespace.
 */
export interface Destination {
  apiVersion: typeof API_VERSION;
  kind: 'Destination';
  metadata: V1ObjectMeta;
  spec: {
    /** Hold events (they wait in the bus or the outbox) instead of delivering them. */
    suspend?: boolean;
    alertmanager?: DestinationAuthSpec & {
      urls: string[];
      resendInterval?: string;
      resolvedRetention?: string;
      resolveAfter?: string;
      timeout?: string;
      maxAlertsPerNamespace?: number;
      maxAlerts?: number;
    };
    http?: DestinationAuthSpec & {
      url: string;
      headers?: Record<string, string>;
      timeout?: string;
      batchSize?: number;
    };
    delivery?: {
      maxAttempts?: number;
      backoffMin?: string;
      backoffMax?: string;
      maxInFlight?: number;
      maxInFlightBytes?: number;
    };
    circuitBreaker?: {
      enabled?: boolean;
      consecutiveFailures?: number;
      failureRatio?: number;
      window?: string;
      minRequests?: number;
      openFor?: string;
    };
    rateLimit?: { eventsPerSecond: number; burst?: number };
    /**
     * Pause after failing continuously for `after` (a Go-style duration, default 24h) until a
     * resume (spec.suspend set to true then false, or the admin API); `enabled: false`: never.
     */
    autoPause?: { enabled?: boolean; after?: string };
  };
  status?: DestinationStatus;
}

/** The last connection the address guard refused for a destination (docs/destinations.md, the address guard). */
export interface AddressRefusal {
  /** RFC 3339. */
  time: string;
  /** The URL's host, as written. */
  host: string;
  /** The address it was (or resolved to) that was refused. */
  address: string;
  /** Why, in words: the range and what it is (`127.0.0.0/8 (loopback, refused by default)`). */
  message: string;
}

/** A receiver's answer, kept for status: its status code and a bounded excerpt of its body or the error. */
export interface DeliveryAnswer {
  /** RFC 3339. */
  time: string;
  /** The HTTP status the receiver answered; absent when there was no answer (a timeout, a refused connection). */
  statusCode?: number;
  /** At most 256 characters, control characters escaped. */
  excerpt?: string;
}

/** `status.delivery` of a Destination: what the ingester replicas delivered, merged by the operator. */
export interface DestinationDelivery {
  lastSuccess?: DeliveryAnswer;
  lastFailure?: DeliveryAnswer;
  deliveredLastHour?: number;
  failedLastHour?: number;
  deadLetteredLastHour?: number;
  /** The last connection the address guard refused (its events were dead-lettered, reason address_refused). */
  addressRefused?: AddressRefusal;
  /** Events waiting for this destination (the bus consumers' pending, or the outbox's rows). */
  backlog?: number;
  /** How long the oldest waiting event has waited, as a Go-style duration. */
  oldestPendingAge?: string;
  /** RFC 3339: when the operator last merged what the replicas reported. */
  updatedTime?: string;
  /** Delivered and failed per minute over the last hour, from `start` (an RFC 3339 minute), oldest first. */
  minutes?: DestinationMinutes;
}

/** Per-minute delivery counts of a Destination (arrays of equal length, one entry per minute from `start`). */
export interface DestinationMinutes {
  start: string;
  delivered: number[];
  failed: number[];
}

export interface DestinationStatus {
  observedGeneration?: number;
  /** Ready, Paused, CircuitOpen. */
  conditions?: Condition[];
  /** The name integrations of the namespace use (metadata.name) and the ingesters' name for it (`<namespace>/<name>`). */
  destinationName?: string;
  delivery?: DestinationDelivery;
}

export type IntakeResource = WebhookIntegration | ApiKey;

export const PLURALS = {
  WebhookIntegration: 'webhookintegrations',
  ApiKey: 'apikeys',
  IntakeQuota: 'intakequotas',
  Destination: 'destinations',
} as const;
