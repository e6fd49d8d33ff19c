/**
 * What the endpoint modules (endpoints/) get from the listener: its options plus the per-server
 * pieces it builds. A type of its own so that the endpoints and the listener do not import each other.
 */
import type { Logger } from 'pino';
import type { ActivityRecorder } from '../activity/recorder.js';
import type { AuthThrottle } from '../auth/auth-throttle.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { SeenMessages } from '../auth/seen-messages.js';
import type { IngesterMetrics } from '../core/ingester-metrics.js';
import type { Inspector } from '../inspector/inspector.js';
import type { LogLimiter } from '../core/log-limiter.js';
import type { TenantLimiter } from '../limits/tenant-limiter.js';
import type { MappedWebhooks } from '../mapping/mapped-webhooks.js';
import type { RouteTable } from '../routing/route-table.js';
import type { RemoteWriter } from '../series/remote-write/writer.js';
import type { SeriesStore } from '../series/series-store.js';
import type { EventSink } from '../sinks/sink.js';
import type { TimeoutSettings } from './guards.js';

export interface IngestLimits extends Partial<TimeoutSettings> {
  bodyBytes: number;
  eventsPerRequest: number;
  pointsPerRequest: number;
  maxEventLoopDelayMs: number;
  /** Authenticated request-body bytes held in memory at once, all tenants (default 64 MiB); http/body-admission.ts. */
  maxInFlightBodyBytes?: number;
  /** ... one namespace (default 16 MiB). */
  maxInFlightBodyBytesPerNamespace?: number;
  /** Bytes of bodies read before their sender is known (signed-only integrations), in all (default 8 MiB). */
  maxUnauthenticatedBodyBytes?: number;
  /** ... from one source address (default 2 MiB). */
  maxUnauthenticatedBodyBytesPerAddress?: number;
  /** ... for one integration (default 4 MiB). */
  maxUnauthenticatedBodyBytesPerIntegration?: number;
  /** A body slower than this on average after the grace is cut with 408 (default 8192); http/upload-rate.ts. */
  minBodyBytesPerSecond?: number;
  /** (default 2000). */
  bodyRateGraceMs?: number;
  /** Total characters of one series' labels (default 2048). */
  maxSeriesLabelChars?: number;
  /** Client connections held at once (default: from the file-descriptor limit). */
  maxConnections?: number;
  /** Connections one remote address holds at once, trusted proxies exempt (default: half of maxConnections). */
  maxConnectionsPerAddress?: number;
  /** Nesting of a JSON body at most (default 64). */
  maxJsonDepth?: number;
}

/** Shared with the admin listener and the shutdown sequence. */
export interface Lifecycle {
  ready: boolean;
  closing: boolean;
  /** The first routing table is still being built: ingest requests get 503 (absent: false). */
  loading?: boolean;
}

export interface IngestServerOptions {
  /** Returns the current table; reloads swap it underneath without locking. */
  routes: () => RouteTable;
  sinks: readonly EventSink[];
  series: SeriesStore;
  /** When set, data points are also forwarded by Prometheus Remote Write. */
  remoteWrite?: RemoteWriter;
  metrics: IngesterMetrics;
  limits: IngestLimits;
  throttle: AuthThrottle;
  /** Least time before a 401 for wrong credentials (see auth/authenticator.ts); default 0. */
  authFailureDelayMs?: number;
  lifecycle: Lifecycle;
  logger: Logger;
  trustProxy?: boolean | number | string;
  https?: { key: Buffer; cert: Buffer };
  /** Data mapping, dry run and dead letter (ingester/mapping/). */
  mapped: MappedWebhooks;
  /** Per-tenant limits (limits/tenant-limiter.ts); absent: none. */
  limiter?: TenantLimiter;
  /** What each integration and key received (activity/recorder.ts); absent: not recorded. */
  activity?: ActivityRecorder;
  /** Keeps the requests of integrations that enabled the event inspector (inspector/inspector.ts). */
  inspector?: Inspector;
}

/** What the route modules get: the options, plus the per-server pieces built here. */
export interface IngestContext extends IngestServerOptions {
  auth: Authenticator;
  mapped: MappedWebhooks;
  /** Sink failures repeat while a sink is down: logged at most once per interval. */
  failures: LogLimiter;
  /** Signed message ids answered recently (Standard Webhooks webhook-id): a repeated one gets the same 200. */
  seen: SeenMessages;
}
