/**
 * A team's destination as the operator publishes it for the ingesters: one labelled Secret per
 * `Destination` resource in the ingesters' own namespace, holding this document (the route
 * documents' pattern, docs/design.md §3). The operator reads the credentials and TLS material
 * from Secrets of the Destination's namespace and puts them in the document, so the ingesters
 * never read a tenant's namespace: they keep their one permission, Secrets of their own namespace.
 *
 * The settings are the ones of a platform destination (`destinations:` in the ingester's
 * settings), with the credentials inline instead of in files.
 */
export const DESTINATION_LABEL = 'intake.dev/destination';
export const DESTINATION_SECRET_KEY = 'destination.json';

/** Credentials and TLS material, inline (the published Secret is readable by the ingesters and the operator only). */
export interface InlineAuth {
  basicAuth?: { username: string; password: string };
  bearerToken?: string;
  /** PEM text. */
  tls?: { ca?: string; cert?: string; key?: string; insecureSkipVerify?: boolean };
}

export interface DestinationDocument {
  apiVersion: 'intake.dev/v1alpha1';
  kind: 'Destination';
  /** The Destination's metadata.name: what integrations of its namespace name. */
  name: string;
  namespace: string;
  suspend?: boolean;
  alertmanager?: InlineAuth & {
    urls: string[];
    resendInterval?: string;
    resolvedRetention?: string;
    resolveAfter?: string;
    timeout?: string;
    maxAlertsPerNamespace?: number;
    maxAlerts?: number;
  };
  http?: InlineAuth & { url: string; headers?: Record<string, string>; timeout?: string; batchSize?: number };
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
}

/**
 * The ingesters' name of a team destination: `<namespace>/<name>`. A platform destination's name
 * never holds a `/`, so the two never meet; route documents carry this name for a team's own
 * destination, and metrics, dead letters and logs show it.
 */
export const teamDestinationName = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The namespace of a team destination's name; undefined for a platform destination's. */
export function namespaceOfDestination(name: string): string | undefined {
  const slash = name.indexOf('/');
  return slash < 0 ? undefined : name.slice(0, slash);
}

/**
 * A name safe in NATS consumer and key-value bucket names (no `/` or `.`): a platform
 * destination's name as it is (what every release used), a team's `<namespace>_<name>` (`_` is
 * in neither a namespace nor a destination name, so this names nothing else).
 */
export const busSafeDestinationName = (name: string): string => name.replace('/', '_');
