/**
 * JSON Schema of a destination's settings, one definition for both places a destination is
 * written: the ingester's settings file (`destinations:`, ingester/destinations/settings.ts, whose
 * credentials are file paths) and a team's destination document (api/destination-document.ts,
 * whose credentials are inline). Only the credentials' properties differ; everything else a
 * destination has (its kind's block, delivery, circuit breaker, rate limit, auto-pause) is here.
 */

export const DURATION_SCHEMA = { type: 'string', pattern: '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$' } as const;
const httpUrl = { type: 'string', pattern: '^https?://[^\\s]+$' } as const;

/** Events a destination may have in flight at most (delivery.maxInFlight). */
export const MAX_DESTINATION_IN_FLIGHT = 10_000;

/** The receiver's protection: circuit breaker, rate limit, auto-pause (ingester/destinations/protection/). */
export const protectionSchemaProperties = {
  circuitBreaker: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enabled: { type: 'boolean' },
      consecutiveFailures: { type: 'integer', minimum: 0 },
      failureRatio: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
      window: DURATION_SCHEMA,
      minRequests: { type: 'integer', minimum: 1 },
      openFor: DURATION_SCHEMA,
    },
  },
  rateLimit: {
    type: 'object',
    additionalProperties: false,
    required: ['eventsPerSecond'],
    properties: {
      eventsPerSecond: { type: 'number', exclusiveMinimum: 0 },
      burst: { type: 'integer', minimum: 1 },
    },
  },
  autoPause: {
    type: 'object',
    additionalProperties: false,
    properties: { enabled: { type: 'boolean' }, after: DURATION_SCHEMA },
  },
} as const;

/** A destination's properties but its identity (name, namespace, default), with `auth` as its credentials' properties. */
export function destinationSettingsProperties<A extends Record<string, unknown>>(auth: A) {
  return {
    suspend: { type: 'boolean' },
    alertmanager: {
      type: 'object',
      additionalProperties: false,
      required: ['urls'],
      properties: {
        urls: { type: 'array', minItems: 1, items: httpUrl },
        resendInterval: DURATION_SCHEMA,
        resolvedRetention: DURATION_SCHEMA,
        resolveAfter: DURATION_SCHEMA,
        timeout: DURATION_SCHEMA,
        maxAlertsPerNamespace: { type: 'integer', minimum: 1 },
        maxAlerts: { type: 'integer', minimum: 1 },
        ...auth,
      },
    },
    http: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      properties: {
        url: httpUrl,
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        timeout: DURATION_SCHEMA,
        batchSize: { type: 'integer', minimum: 1, maximum: 1000 },
        ...auth,
      },
    },
    delivery: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxAttempts: { type: 'integer', minimum: 1 },
        backoffMin: DURATION_SCHEMA,
        backoffMax: DURATION_SCHEMA,
        maxInFlight: { type: 'integer', minimum: 1, maximum: MAX_DESTINATION_IN_FLIGHT },
        maxInFlightBytes: { type: 'integer', minimum: 65536 },
      },
    },
    ...protectionSchemaProperties,
  } as const;
}
