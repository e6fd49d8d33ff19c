/**
 * Load the way a well-behaved monitoring tool sends it: several concurrent senders, each request a
 * batch of events carrying unique `trace` values and an Idempotency-Key, retried with the same key
 * and body on 503 or a connection error (a bounded number of times), never on 200 or 4xx.
 */
import { randomUUID } from 'node:crypto';
import { basic, DEMO } from './ingester.js';

export interface RequestOutcome {
  traces: string[];
  key: string;
  /** The final answer after retries. */
  status: number | 'error';
  attempts: number;
  body?: { response?: { processed: number; cached: number; received: number } };
  retryAfter?: string | null;
}

export interface LoadOptions {
  url: string;
  senders: number;
  batch: number;
  /** Retries after the first attempt. */
  retries: number;
  retryDelayMs: number;
  /** Senders stop starting new requests once this returns true. */
  done: () => boolean;
  /** Every answer, including those that are retried (to see cached > 0 during an outage). */
  onAnswer?: (status: number | 'error', body: RequestOutcome['body']) => void;
}

export async function sendLoad(o: LoadOptions): Promise<RequestOutcome[]> {
  const outcomes: RequestOutcome[] = [];
  let seq = 0;
  const run = randomUUID().slice(0, 8);
  const sender = async (worker: number): Promise<void> => {
    while (!o.done()) {
      const traces = Array.from({ length: o.batch }, () => `${run}-w${worker}-${seq++}`);
      outcomes.push(await sendWithRetries(o, traces));
    }
  };
  await Promise.all(Array.from({ length: o.senders }, (_, i) => sender(i)));
  return outcomes;
}

export async function sendWithRetries(
  o: Pick<LoadOptions, 'url' | 'retries' | 'retryDelayMs' | 'onAnswer'>,
  traces: string[],
  key = randomUUID(),
): Promise<RequestOutcome> {
  const body = JSON.stringify(traces.map((trace) => ({ source: 'load', severity: 'major', trace })));
  let outcome: RequestOutcome = { traces, key, status: 'error', attempts: 0 };
  for (let attempt = 0; attempt <= o.retries; attempt++) {
    outcome = { traces, key, status: 'error', attempts: attempt + 1 };
    try {
      const res = await fetch(o.url, {
        method: 'POST',
        headers: {
          authorization: basic(DEMO.user, DEMO.password),
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      outcome.status = res.status;
      outcome.retryAfter = res.headers.get('retry-after');
      outcome.body = JSON.parse(text) as RequestOutcome['body'];
    } catch {
      outcome.status = 'error';
    }
    o.onAnswer?.(outcome.status, outcome.body);
    if (outcome.status !== 503 && outcome.status !== 'error') return outcome;
    await new Promise((r) => setTimeout(r, o.retryDelayMs));
  }
  return outcome;
}

/** Traces of every event whose request was answered 200. */
export const acknowledgedTraces = (outcomes: RequestOutcome[]): string[] =>
  outcomes.filter((o) => o.status === 200).flatMap((o) => o.traces);
