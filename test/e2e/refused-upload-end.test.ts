/**
 * A body refused before it was read gets one answer, through the built ingester: when its sender
 * then stops sending (ends its side mid-body, as a stranger dropping each refused upload does),
 * or the rest of the body runs out of time, the connection is closed without a second answer on
 * it (a second answer is garbage to the sender, and each one costs the ingester a response for a
 * connection no one reads).
 */
import { startIngester, type RunningIngester } from './support/ingester.js';
import { openSocket, readAll, waitForText } from './support/raw-http.js';

let ing: RunningIngester;
beforeAll(async () => {
  ing = await startIngester((c) => {
    (c.routes as unknown[]).push({
      apiVersion: 'intake.dev/v1alpha1',
      kind: 'WebhookIntegration',
      name: 'gh',
      namespace: 'team-a',
      credentials: [],
      authentication: { mode: 'signature', signature: { scheme: 'github', secrets: [{ value: 'a-github-secret' }] } },
    });
    // One address's pre-auth share holds one 64 KiB upload; the rate floor far out of the way.
    c.limits = {
      ...(c.limits as object),
      maxUnauthenticatedBodyBytesPerAddress: 65536,
      minBodyBytesPerSecond: 1,
      bodyRateGrace: '60s',
    };
  });
});
afterAll(async () => {
  await ing?.stop();
});

const head = (length: number) =>
  `POST /events/webhook_gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n` +
  `X-Hub-Signature-256: sha256=${'0'.repeat(64)}\r\n\r\n{`;

it('a refused upload whose sender then ends its side mid-body is closed with its one answer, no second', async () => {
  const port = Number(new URL(ing.url).port);
  const held = await openSocket(port);
  held.write(head(65536));
  await new Promise((r) => setTimeout(r, 300));
  try {
    for (let i = 0; i < 3; i++) {
      const refused = await openSocket(port);
      refused.write(head(65536));
      const answer = await waitForText(refused, /\r\n\r\n\{.*\}$/s);
      expect(answer).toMatch(/^HTTP\/1\.1 429 /);
      // The sender gives up on its body: ends its side, and reads whatever else comes.
      refused.end();
      const { text, closed } = await readAll(refused, 5000);
      expect({ after: text, closed }).toEqual({ after: '', closed: true });
    }
  } finally {
    held.destroy();
  }
}, 30_000);
