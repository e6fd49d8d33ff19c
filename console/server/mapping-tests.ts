/** spec.mapping.tests run for the console's user, as the operator runs them before publishing. */
import {
  compileMapping,
  DEFAULT_MAPPING_LIMITS,
  firstDifference,
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingLimits,
  type MappingSpec,
} from '../../api/mapping/engine.js';
import type { MappingTestResult } from '../shared/console-api.js';

/**
 * Runs each of spec.mapping.tests (the check the operator makes before publishing), reporting every
 * one. A tenant's expression runs in `runner` (the mapping worker processes, killed at the CPU
 * limit: a runaway built-in call or regular expression included), never in the console's own
 * thread; presets, which are ours, run here. After a test runs out of time the rest are not run:
 * one run costs at most one time limit of a worker, whatever the integration holds.
 * Rejects with MappingBusy when the workers can take nothing more.
 */
export async function runTests(
  mapping: MappingSpec,
  runner: ExpressionRunner,
  limits: MappingLimits = DEFAULT_MAPPING_LIMITS,
): Promise<MappingTestResult[]> {
  let compiled;
  try {
    compiled = compileMapping(mapping, limits, runner);
  } catch (err) {
    return [{ index: -1, outcome: 'failed', passed: false, message: MappingError.from(err).describe() }];
  }
  const results: MappingTestResult[] = [];
  let timedOut = false;
  for (const [index, test] of (mapping.tests ?? []).entries()) {
    if (timedOut) {
      results.push({ index, outcome: 'not run', passed: false, message: 'not run: an earlier test timed out' });
      continue;
    }
    let events: unknown[];
    try {
      events = (await compiled.evaluate(test.input)).items;
    } catch (err) {
      if (err instanceof MappingBusy) throw err;
      const e = MappingError.from(err);
      timedOut = e.code === 'D1012';
      results.push({ index, outcome: timedOut ? 'timed out' : 'failed', passed: false, message: e.describe() });
      continue;
    }
    const expected = Array.isArray(test.expect) ? test.expect : [test.expect];
    let message = '';
    if (events.length !== expected.length)
      message = `expected ${expected.length} event(s), the mapping produced ${events.length}`;
    for (let j = 0; !message && j < expected.length; j++) {
      const difference = firstDifference(expected[j], events[j], '');
      if (difference) message = `event ${j}: ${difference}`;
    }
    results.push({
      index,
      outcome: message ? 'failed' : 'passed',
      passed: !message,
      message: message || 'passed',
      events,
    });
  }
  return results;
}
