/**
 * Two ingesters around a real nats-server, both exporting their spans to a real OpenTelemetry
 * Collector: the receiving one hands every event off to the bus and delivers nothing, the
 * delivering one only delivers, to an HTTP receiver (destination `tickets`, retried quickly).
 */
import { expect } from '@jest/globals';
import { startEventReceiver, type EventReceiver } from './event-receiver.js';
import { startIngester, type RunningIngester } from './ingester.js';
import { handoffConfig, startNats, type RunningNats } from './nats-server.js';
import { startCollector, tracingEnv, type ExportedSpan, type RunningCollector } from './otel-collector.js';

export interface TracedHandOff {
  nats: RunningNats;
  collector: RunningCollector;
  receiver: EventReceiver;
  receiving: RunningIngester;
  delivering: RunningIngester;
  /** Kills both ingesters, then stops the receiver, the bus and the collector. */
  stop(): Promise<void>;
}

export async function startTracedHandOff(
  options: { receivingSpoolDir?: string; receivingEnv?: NodeJS.ProcessEnv } = {},
): Promise<TracedHandOff> {
  const [nats, collector, receiver] = await Promise.all([startNats(), startCollector(), startEventReceiver()]);
  const started: RunningIngester[] = [];
  const stop = async (): Promise<void> => {
    for (const i of started) await i.stop('SIGKILL');
    await Promise.all([receiver.close(), nats.stop(), collector.stop()]);
  };
  try {
    started.push(
      await startIngester(
        handoffConfig(nats, options.receivingSpoolDir ? { spoolDir: options.receivingSpoolDir } : {}),
        { env: tracingEnv(collector, 'intake-receiving', options.receivingEnv) },
      ),
    );
    started.push(
      await startIngester(
        (c) => {
          handoffConfig(nats)(c);
          c.destinations = [
            {
              name: 'tickets',
              default: true,
              http: { url: receiver.url, timeout: '2s' },
              delivery: { backoffMin: '50ms', backoffMax: '200ms' },
            },
          ];
        },
        { env: tracingEnv(collector, 'intake-delivering') },
      ),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const [receiving, delivering] = started as [RunningIngester, RunningIngester];
  return { nats, collector, receiver, receiving, delivering, stop };
}

/** The one span named `name` among `spans` (fails the test when there are none or several). */
export function onlySpan(spans: ExportedSpan[], name: string): ExportedSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found).toHaveLength(1);
  return found[0] as ExportedSpan;
}
