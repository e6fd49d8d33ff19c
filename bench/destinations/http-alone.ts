/**
 * The floor of the HTTP batchSize 1 rows of the destinations benchmark: a bare undici client (an
 * Agent with as many connections as intake's HTTP destination opens, its delivery.maxInFlight)
 * posting the benchmark's events one per request to the same kind of receiver, as many at once as
 * connections, and nothing else: no queue, no dispatcher, no metrics. Run by
 * bench/destinations/destinations.ts as a child on intake's CPU. Prints the seconds it took, and
 * its own CPU seconds, as JSON.
 *
 * usage: node dist/bench/destinations/http-alone.js <receiver url> <events> <connections>
 */
import { Agent } from 'undici';
import { destinationEvent } from './destination-events.js';

async function main(): Promise<void> {
  const [url, countText, connectionsText] = process.argv.slice(2);
  if (!url || !countText || !connectionsText) throw new Error('usage: http-alone.js <url> <events> <connections>');
  const count = Number(countText);
  const connections = Number(connectionsText);
  const agent = new Agent({ connections });
  const target = new URL(url);
  // The bodies are built before the clock starts, as intake's are stored before it delivers them.
  const bodies = Array.from({ length: count }, (_, n) => JSON.stringify({ id: `e-${n}`, ...destinationEvent(n) }));
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let i = next++; i < bodies.length; i = next++) {
        const res = await agent.request({
          origin: target.origin,
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: bodies[i],
        });
        if (res.statusCode !== 200) throw new Error(`the receiver answered ${res.statusCode}`);
        await res.body.dump();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await agent.close();
  process.stdout.write(`${JSON.stringify({ seconds, cpuSeconds: (used.user + used.system) / 1e6 })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
