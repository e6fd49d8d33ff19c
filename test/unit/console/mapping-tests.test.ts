/** The console's run of spec.mapping.tests (console/server/mapping-tests.ts runTests): through a runner, honest outcomes. */
import {
  MappingBusy,
  MappingError,
  type ExpressionRunner,
  type MappingLimits,
  type MappingResult,
} from '../../../api/mapping/engine.js';
import { runTests } from '../../../console/server/mapping-tests.js';

/** A runner that answers each evaluation from `answer`, and records what it was asked. */
function fakeRunner(answer: (body: unknown, call: number) => MappingResult | Error): ExpressionRunner & {
  calls: Array<{ source: string; limits: MappingLimits; body: unknown }>;
} {
  const calls: Array<{ source: string; limits: MappingLimits; body: unknown }> = [];
  return {
    calls,
    run: (source, limits, json) => {
      const body: unknown = JSON.parse(new TextDecoder().decode(json));
      calls.push({ source, limits, body });
      const out = answer(body, calls.length - 1);
      return out instanceof Error ? Promise.reject(out) : Promise.resolve(out);
    },
  };
}

const result = (items: unknown[]): MappingResult => ({ items, cpuMs: 1, outputBytes: 10 });

describe('runTests', () => {
  it("evaluates a tenant's expression only through the runner, and reports passed and failed tests", async () => {
    const runner = fakeRunner((body) => result([{ source: (body as { s: string }).s }]));
    const results = await runTests(
      {
        expression: '{"source": s}',
        tests: [
          { input: { s: 'a' }, expect: { source: 'a' } },
          { input: { s: 'b' }, expect: { source: 'x' } },
        ],
      },
      runner,
    );
    expect(runner.calls.map((c) => c.body)).toEqual([{ s: 'a' }, { s: 'b' }]);
    expect(runner.calls[0]?.limits.timeoutMs).toBe(500);
    expect(results.map((r) => [r.outcome, r.passed])).toEqual([
      ['passed', true],
      ['failed', false],
    ]);
    expect(results[1]?.message).toBe('event 0: source: expected "x", got "b"');
  });

  it('says "timed out" for a test stopped at its CPU limit, never "passed", and runs no test after it', async () => {
    const runner = fakeRunner((_body, call) =>
      call === 1 ? new MappingError('D1012', 'Evaluation timeout: stopped after 612 ms of CPU time') : result([{}]),
    );
    const results = await runTests(
      { expression: '$x', tests: [0, 1, 2, 3].map(() => ({ input: {}, expect: {} })) },
      runner,
    );
    expect(results.map((r) => r.outcome)).toEqual(['passed', 'timed out', 'not run', 'not run']);
    expect(results[1]?.message).toMatch(/^D1012: Evaluation timeout/);
    expect(results[2]?.message).toBe('not run: an earlier test timed out');
    expect(runner.calls).toHaveLength(2);
  });

  it('reports another guardrail (the heap cap) as failed, and goes on', async () => {
    const runner = fakeRunner((_body, call) =>
      call === 0
        ? new MappingError('INTAKE_MEMORY_LIMIT', 'the evaluation used more than the mapping heap')
        : result([{}]),
    );
    const results = await runTests(
      {
        expression: '$x',
        tests: [
          { input: {}, expect: {} },
          { input: {}, expect: {} },
        ],
      },
      runner,
    );
    expect(results.map((r) => r.outcome)).toEqual(['failed', 'passed']);
  });

  it('rejects with MappingBusy when the workers take nothing more (the server answers 503 with Retry-After)', async () => {
    const runner = fakeRunner(() => new MappingBusy('64 payloads are waiting', 1));
    await expect(runTests({ expression: '$x', tests: [{ input: {}, expect: {} }] }, runner)).rejects.toBeInstanceOf(
      MappingBusy,
    );
  });

  it('runs a preset here (ours), and reports a compile error as the mapping failing', async () => {
    const runner = fakeRunner(() => new Error('not for presets'));
    const alert = {
      status: 'firing',
      labels: { alertname: 'Down', instance: 'web-9', severity: 'critical' },
      annotations: {},
      startsAt: '2026-11-22T20:00:00Z',
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint: 'f00d',
    };
    const preset = await runTests(
      {
        preset: 'alertmanager',
        tests: [{ input: { receiver: 'intake', status: 'firing', alerts: [alert] }, expect: [{ source: 'web-9' }] }],
      },
      runner,
    );
    expect(preset.map((r) => r.outcome)).toEqual(['passed']);
    const broken = await runTests({ expression: '{', tests: [{ input: {}, expect: {} }] }, runner);
    expect(broken).toEqual([{ index: -1, outcome: 'failed', passed: false, message: expect.stringMatching(/^S0/) }]);
    expect(runner.calls).toHaveLength(0);
  });
});
