/**
 * The built ingester serves without Maglev (ingester/serving-v8-flags.ts), however it is started:
 * here as `node dist/cmd/intake.js` with no flag of ours on the command line. V8's own trace of its
 * optimising compilers (--trace-opt, on stdout beside the events) says which compiler took each hot
 * function: under a few thousand single events the request path must reach TurboFan and never
 * Maglev. Only what is compiled once the ingester is ready and idle counts: it loads its routes with Maglev.
 */
import { basic, DEMO, post, startIngester } from './support/ingester.js';

const EVENTS = 3000;
const CONCURRENCY = 16;
const SETTLE_MS = 2000;

/** Which optimising compilers V8 says it compiled functions with, from --trace-opt's lines. */
function compilerTargets(stdout: string): Set<string> {
  const targets = new Set<string>();
  for (const m of stdout.matchAll(/^\[compiling method .*\(target (\w+)\)/gm)) targets.add(m[1] as string);
  return targets;
}

describe('the V8 flags intake sets for itself', () => {
  it('keep Maglev off: the hot request path is compiled by TurboFan only', async () => {
    const ing = await startIngester(() => {}, { nodeArgs: ['--trace-opt'], env: { NODE_OPTIONS: '' } });
    // Compilations the route loading asked for may still finish just after ready (they run on
    // V8's background threads): only what is compiled after a quiet moment counts.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const atReady = ing.stdout().length;
    try {
      const auth = { authorization: basic(DEMO.user, DEMO.password) };
      let next = 0;
      const statuses: number[] = [];
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < EVENTS) {
            next++;
            const res = await post(
              `${ing.url}/events/webhook_demo`,
              { source: 'host-1', severity: 'critical', class: 'cpu', type: 'high' },
              auth,
            );
            statuses.push(res.status);
          }
        }),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    } finally {
      await ing.stop();
    }
    const targets = compilerTargets(ing.stdout().slice(atReady));
    expect(targets).toContain('TURBOFAN_JS');
    expect([...targets].filter((t) => t.includes('MAGLEV'))).toEqual([]);
  }, 60_000);
});
