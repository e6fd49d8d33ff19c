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
export const FINALIZER = 'intake.dev/cleanup';

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
    /** Destination names configured in the ingester; absent: the default destinations. */
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

export type IntakeResource = WebhookIntegration | ApiKey;

export const PLURALS = {
  WebhookIntegration: 'webhookintegrations',
  ApiKey: 'apikeys',
  IntakeQuota: 'intakequotas',
} as const;
