/**
 * The inspector's store, chosen like the dead letters': the bus's stream when the bus is
 * configured (every replica reads what any one kept, and a restart loses nothing), else this
 * replica's memory. Loaded only when some integration could use it: the stream costs nothing
 * until a capture is written.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { JetStreamSettings } from '../sinks/handoff-config.js';
import type { IngesterMetrics } from '../core/ingester-metrics.js';
import type { NormalisedEvent } from '../core/event.js';
import { listenToDeliveries } from '../destinations/delivery-attempts.js';
import { acceptEvents } from '../events/accept.js';
import type { TenantLimiter } from '../limits/tenant-limiter.js';
import type { RouteTable } from '../routing/route-table.js';
import type { EventSink } from '../sinks/sink.js';
import { registerInspectorEndpoints } from './admin-endpoints.js';
import { Inspector } from './inspector.js';
import { MemoryInspectorStore } from './memory-store.js';
import type { InspectorSettings } from './settings.js';
import type { InspectorStore } from './store.js';

export interface InspectorSetup {
  settings: InspectorSettings;
  routes: () => RouteTable;
  logger: Logger;
  /** The bus, when configured: its settings, and a call for each (re)connection. */
  bus?: {
    settings: JetStreamSettings;
    onConnected(listener: (nc: NatsConnection) => void): void;
  };
}

export async function setUpInspector(o: InspectorSetup): Promise<Inspector> {
  let store: InspectorStore;
  if (o.bus) {
    const { BusInspectorStore } = await import('./bus-store.js');
    const s = o.bus.settings;
    const bus = new BusInspectorStore(o.settings, s.timeoutMs, s.streamConfig.replicas, o.logger);
    o.bus.onConnected((nc) => bus.attach(nc));
    store = bus;
  } else store = new MemoryInspectorStore(o.settings);
  const inspector = new Inspector(store, o.settings, o.routes);
  listenToDeliveries({
    wantsAny: () => o.routes().inspects,
    wants: (w) => inspector.inspects(w),
    answered: (w, a) => inspector.attempt(w, a),
  });
  return inspector;
}

/** The admin endpoints; a replay hands the event to the sinks as a new one, through the tenant's rate limit. */
export function registerInspector(
  admin: FastifyInstance,
  inspector: Inspector,
  o: {
    routes: () => RouteTable;
    sinks: readonly EventSink[];
    metrics: IngesterMetrics;
    limiter: TenantLimiter;
    logger: Logger;
  },
): void {
  registerInspectorEndpoints(admin, {
    inspector,
    replay: async (where, captured) => {
      const entry = o.routes().webhook(where.integration);
      if (!entry || entry.namespace !== where.namespace) throw new Error('the integration is not published here');
      const event = {
        ...captured,
        id: randomUUID(),
        received_at: new Date().toISOString(),
      } as unknown as NormalisedEvent;
      o.limiter.take(entry, 1);
      try {
        await acceptEvents([event], where, {
          sinks: o.sinks,
          metrics: o.metrics,
          onSinkError: (sink, err) =>
            o.logger.warn({ sink, err: { message: (err as Error).message } }, 'inspector replay: sink failed'),
        });
      } catch (err) {
        o.limiter.giveBack(entry, 1);
        throw err;
      }
      return event.id;
    },
  });
}
