/**
 * The hostile-neighbour matrix's common half (docs/design.md §4b): while a stranger or tenant A
 * attacks one shared resource, tenant B sends at a steady rate on the same ingester. Each row of
 * the matrix (one file per shared resource in this folder) starts the attack, runs `steadyTenant`
 * beside it, and checks with `expectUnharmed` that B got no refusal it did not earn, stayed within a
 * stated latency bound, and that the replica stayed ready throughout.
 */
import { performance } from 'node:perf_hooks';

export interface SteadyOptions {
  /** Where B posts (an ingest URL). */
  url: string;
  /** B's request headers (its credentials, content type). */
  headers: Record<string, string>;
  /** B's body: a fixed string, or one built per request (unique ids, signatures). */
  body: string | ((seq: number) => { body: string; headers?: Record<string, string> });
  /** Requests per second B offers (open loop: B does not slow down when answers do). */
  perSecond: number;
  durationMs: number;
  /** B stops sending once this settles (the attack is over), if that is before `durationMs`. */
  until?: Promise<unknown>;
  /** Per-request deadline; a request past it counts as an error. */
  timeoutMs?: number;
  /** The ingester's admin URL: /readyz is polled every 100 ms while B runs. */
  adminUrl?: string;
}

export interface SteadyResult {
  /** Status of each of B's requests, in order sent ('error' for no answer in time). */
  statuses: Array<number | 'error'>;
  /** The bodies of B's non-200 answers (to say what refused it). */
  refusals: string[];
  latenciesMs: number[];
  p50Ms: number;
  p99Ms: number;
  /** How many /readyz polls answered other than 200, and what the first of them said. */
  unreadyPolls: number;
  firstUnready?: string;
}

const quantile = (xs: number[], q: number): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};

/** Tenant B: `perSecond` requests a second for `durationMs`, each timed; /readyz polled beside. */
export async function steadyTenant(o: SteadyOptions): Promise<SteadyResult> {
  const statuses: Array<number | 'error'> = [];
  const refusals: string[] = [];
  const latenciesMs: number[] = [];
  let unreadyPolls = 0;
  let firstUnready: string | undefined;
  const end = performance.now() + o.durationMs;
  let polling = true;
  const poll = (async () => {
    while (polling && o.adminUrl !== undefined) {
      try {
        const res = await fetch(`${o.adminUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
        const text = await res.text();
        if (res.status !== 200) {
          unreadyPolls++;
          firstUnready ??= `${res.status} ${text}`;
        }
      } catch (err) {
        unreadyPolls++;
        firstUnready ??= String(err);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const inFlight: Array<Promise<void>> = [];
  const interval = 1000 / o.perSecond;
  let stopped = false;
  const stop = (): void => void (stopped = true);
  o.until?.then(stop, stop);
  for (let seq = 0; performance.now() < end && !stopped; seq++) {
    const built = typeof o.body === 'string' ? { body: o.body } : o.body(seq);
    const started = performance.now();
    const index = statuses.push('error') - 1;
    inFlight.push(
      fetch(o.url, {
        method: 'POST',
        headers: { ...o.headers, ...built.headers },
        body: built.body,
        signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
      })
        .then(async (res) => {
          const text = await res.text();
          statuses[index] = res.status;
          if (res.status !== 200) refusals.push(`${res.status} ${text}`);
        })
        .catch((err: unknown) => {
          refusals.push(`error ${String(err)}`);
        })
        .finally(() => latenciesMs.push(performance.now() - started)),
    );
    const next = started + interval;
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await Promise.all(inFlight);
  polling = false;
  await poll;
  return {
    statuses,
    refusals,
    latenciesMs,
    p50Ms: quantile(latenciesMs, 0.5),
    p99Ms: quantile(latenciesMs, 0.99),
    unreadyPolls,
    firstUnready,
  };
}

/**
 * B was unharmed: every request answered 200 (or one of `earned`, statuses B brought on itself),
 * p99 within `p99BoundMs`, and the replica never unready. The failure message says what happened.
 */
export function expectUnharmed(result: SteadyResult, bound: { p99BoundMs: number; earned?: number[] }): void {
  const unearned = result.statuses.filter((s) => s !== 200 && !(typeof s === 'number' && bound.earned?.includes(s)));
  const summary =
    `B: ${result.statuses.length} requests, ${unearned.length} refused unearned ` +
    `(first: ${result.refusals[0] ?? '-'}), p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms ` +
    `(bound ${bound.p99BoundMs} ms), unready polls ${result.unreadyPolls} (${result.firstUnready ?? '-'})`;
  expect({ summary, ok: unearned.length === 0 && result.statuses.length > 0 }).toEqual({ summary, ok: true });
  expect({ summary, ok: result.p99Ms <= bound.p99BoundMs }).toEqual({ summary, ok: true });
  expect({ summary, ok: result.unreadyPolls === 0 }).toEqual({ summary, ok: true });
}

export interface StoreBurst {
  /** A's answers: how many were accepted, and each refusal as `status retry-after body`. */
  acceptedOfA: number;
  refusalsOfA: string[];
  b: SteadyResult;
}

/**
 * Tenant A bursts 50-event requests of 4 KiB descriptions into a store every tenant shares (the
 * spool, the outbox) from four senders; once A holds its whole share (its first refusal, or after
 * `headStartMs` [2 s] at most), tenant B sends one event 20 times a second for `durationMs` [8 s]
 * beside it. Both post to `ingestUrl` with their integrations' Basic credentials.
 */
export async function burstIntoStore(o: {
  ingestUrl: string;
  adminUrl: string;
  a: { integration: string; authorization: string };
  b: { integration: string; authorization: string };
  headStartMs?: number;
  durationMs?: number;
}): Promise<StoreBurst> {
  let attacking = true;
  const refusalsOfA: string[] = [];
  let acceptedOfA = 0;
  const burst = async (worker: number): Promise<void> => {
    for (let n = 0; attacking; n++) {
      const events = Array.from({ length: 50 }, (_, i) => ({
        source: `a-${worker}-${n}-${i}`,
        severity: 3,
        description: 'x'.repeat(4096),
      }));
      const res = await fetch(`${o.ingestUrl}/events/webhook_${o.a.integration}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: o.a.authorization },
        body: JSON.stringify(events),
      })
        .then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), text: await r.text() }))
        .catch(() => undefined);
      if (res?.status === 200) acceptedOfA++;
      else if (res) {
        refusalsOfA.push(`${res.status} ${res.retryAfter ?? '-'} ${res.text}`);
        // Refused at once: the next try after a short pause, as a sender honouring Retry-After would not.
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const attack = Promise.all([burst(0), burst(1), burst(2), burst(3)]);
  // A holds its whole share before B starts: A's first refusal says so.
  for (
    const until = performance.now() + (o.headStartMs ?? 2000);
    refusalsOfA.length === 0 && performance.now() < until;
  )
    await new Promise((r) => setTimeout(r, 20));
  const b = await steadyTenant({
    url: `${o.ingestUrl}/events/webhook_${o.b.integration}`,
    headers: { 'content-type': 'application/json', authorization: o.b.authorization },
    body: (seq) => ({ body: JSON.stringify({ source: `b-${seq}`, severity: 2, description: 'steady' }) }),
    perSecond: 20,
    durationMs: o.durationMs ?? 8000,
    adminUrl: o.adminUrl,
  });
  attacking = false;
  await attack;
  return { acceptedOfA, refusalsOfA, b };
}
