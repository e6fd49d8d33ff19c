/**
 * Alertmanager's own ceiling for the destinations benchmark: the alerts intake would send for the
 * benchmark's events (normalised and turned into alerts by intake's own functions), posted straight to
 * Alertmanager in batches of MAX_ALERTS_PER_POST over as many connections as intake's destination
 * uses. Run by bench/destinations/destinations.ts as a child on intake's CPU, so that Alertmanager has what it
 * has in the Alertmanager cases: the other core. Prints the seconds it took as JSON.
 *
 * usage: node dist/bench/destinations/alertmanager-alone.js <alertmanager url> <alerts> <first signature>
 */
import { parseEvents } from '../../ingester/core/event.js';
import { annotationsOf, labelsOf, type PostableAlert } from '../../ingester/destinations/alertmanager/alerts.js';
import {
  ALERTMANAGER_CONNECTIONS,
  MAX_ALERTS_PER_POST,
} from '../../ingester/destinations/alertmanager/alertmanager-destination.js';
import { destinationEvent } from './destination-events.js';

/** intake's Alertmanager destination posts over at most this many connections. */
const CONNECTIONS = ALERTMANAGER_CONNECTIONS;

/** The alerts intake posts for events first..first+n-1, normalised as intake normalises them. */
function alertsFor(first: number, n: number, endsAt: string): PostableAlert[] {
  const ctx = { namespace: 'bench', integration: 'bench', receivedAtMs: Date.now() };
  return parseEvents(
    Array.from({ length: n }, (_, i) => destinationEvent(first + i)),
    n,
    ctx,
  ).map((e) => ({ labels: labelsOf(e), annotations: annotationsOf(e), startsAt: e.agent_time, endsAt }));
}

async function main(): Promise<void> {
  const [url, countText, firstText] = process.argv.slice(2);
  if (!url || !countText) throw new Error('usage: alertmanager-alone.js <url> <alerts> [first]');
  const count = Number(countText);
  const first = Number(firstText ?? 0);
  const endsAt = new Date(Date.now() + 3_600_000).toISOString();
  // The bodies are built before the clock starts: intake's cost is measured elsewhere.
  const bodies: string[] = [];
  for (let from = first; from < first + count; from += MAX_ALERTS_PER_POST) {
    const n = Math.min(MAX_ALERTS_PER_POST, first + count - from);
    bodies.push(JSON.stringify(alertsFor(from, n, endsAt)));
  }
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      for (let i = next++; i < bodies.length; i = next++) {
        const res = await fetch(`${url}/api/v2/alerts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: bodies[i],
        });
        if (res.status !== 200) throw new Error(`Alertmanager answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      }
    }),
  );
  process.stdout.write(`${JSON.stringify({ seconds: (performance.now() - started) / 1000 })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
