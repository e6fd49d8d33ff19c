/**
 * SIGTERM under load: every request answered 200 has all of its events in the log sink; every
 * other answer is a 503 with Retry-After or a refused connection; the process exits 0.
 */
import { Agent, request } from 'node:http';
import { waitFor } from '../support/waiting.js';
import { basic, DEMO, eventLines, startIngester } from './support/ingester.js';

interface Outcome {
  status: number | 'error';
  ids: string[];
  retryAfter?: string;
  body?: string;
}

function send(url: URL, agent: Agent, ids: string[]): Promise<Outcome> {
  const body = JSON.stringify(ids.map((id) => ({ source: 'load', severity: 2, trace: id })));
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: basic(DEMO.user, DEMO.password),
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ids,
            retryAfter: res.headers['retry-after'] as string | undefined,
            body: text,
          }),
        );
        res.on('error', () => resolve({ status: 'error', ids }));
      },
    );
    req.on('error', () => resolve({ status: 'error', ids }));
    req.end(body);
  });
}

it('loses no acknowledged event when stopped with SIGTERM during load', async () => {
  const ing = await startIngester((c) => (c.shutdown = { drainDelay: '1s', timeout: '10s' }));
  const url = new URL(`${ing.url}/events/webhook_demo`);
  const agent = new Agent({ keepAlive: true, maxSockets: 20 });
  const outcomes: Outcome[] = [];
  let stop = false;
  let seq = 0;
  const sender = async (worker: number): Promise<void> => {
    while (!stop) {
      const ids = [0, 1, 2].map(() => `w${worker}-${seq++}`);
      const outcome = await send(url, agent, ids);
      outcomes.push(outcome);
      if (outcome.status === 'error') await new Promise((r) => setTimeout(r, 5));
    }
  };
  const senders = Array.from({ length: 20 }, (_, i) => sender(i));
  await new Promise((r) => setTimeout(r, 700));
  ing.child.kill('SIGTERM');
  await waitFor(
    'readyz turns 503 during the drain delay',
    async () => (await fetch(`${ing.adminUrl}/readyz`)).status === 503,
    900,
    20,
  );
  const code = await ing.exited;
  await new Promise((r) => setTimeout(r, 200));
  stop = true;
  await Promise.all(senders);
  agent.destroy();

  expect(code).toBe(0);
  const logged = new Set(eventLines(ing.stdout()).map((e) => (e.custom_info as { trace: string }).trace));
  const accepted = outcomes.filter((o) => o.status === 200);
  expect(accepted.length).toBeGreaterThan(50);
  for (const o of accepted) for (const id of o.ids) expect(logged.has(id)).toBe(true);
  const others = outcomes.filter((o) => o.status !== 200);
  expect(others.length).toBeGreaterThan(0);
  for (const o of others) {
    if (o.status === 'error') continue;
    expect(o.status).toBe(503);
    expect(o.retryAfter).toBeDefined();
    expect(JSON.parse(o.body ?? '{}')).toMatchObject({ success: false });
  }
});
