/**
 * useServingV8Flags (ingester/serving-v8-flags.ts) turns Maglev off for what gets hot afterwards.
 * V8's flags belong to the process, so each case runs in a child Node of its own, which imports
 * the module (Node strips its types), makes one function hot and reports the optimising tiers
 * the function ran in (V8's natives syntax).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../../support/paths.js';

const MODULE = pathToFileURL(join(ROOT, 'ingester/serving-v8-flags.ts')).href;

const PROBE = `
const { useServingV8Flags, SERVING_V8_FLAGS } = await import(${JSON.stringify(MODULE)});
if (process.env.USE === '1') { useServingV8Flags(); useServingV8Flags(); }
function hot(a) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 2; return s; }
const values = Array.from({ length: 100 }, (_, i) => i);
const tiers = new Set();
for (let i = 0; i < 20000; i++) {
  hot(values);
  if (%ActiveTierIsMaglev(hot)) tiers.add('maglev');
  if (%ActiveTierIsTurbofan(hot)) tiers.add('turbofan');
}
process.stdout.write(JSON.stringify({ tiers: [...tiers].sort(), flags: SERVING_V8_FLAGS }));
`;

function tiersOf(use: boolean): { tiers: string[]; flags: string[] } {
  // Compiled on the main thread (no background compile jobs), so that a busy machine cannot
  // delay a tier past the loop.
  const args = ['--allow-natives-syntax', '--no-concurrent-recompilation', '--input-type=module', '-e', PROBE];
  const run = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '', USE: use ? '1' : '0' },
    timeout: 30_000,
  });
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as { tiers: string[]; flags: string[] };
}

describe('the V8 flags the ingester serves with', () => {
  it('are --no-maglev', () => {
    expect(tiersOf(false).flags).toEqual(['--no-maglev']);
  });

  it('leave a function that gets hot afterwards to TurboFan alone, where it would run in Maglev first', () => {
    // Without them the probe's function runs in Maglev on its way to TurboFan: the check itself works.
    expect(tiersOf(false).tiers).toEqual(['maglev', 'turbofan']);
    expect(tiersOf(true).tiers).toEqual(['turbofan']);
  });
});
