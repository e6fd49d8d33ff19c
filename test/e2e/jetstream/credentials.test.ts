/** NATS authentication from a file: an NKey seed the ingester reads, never logs, and signs with. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeyAuthenticator, nkeys } from '@nats-io/transport-node';
import { basic, DEMO, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, readStream, startNats, type RunningNats } from '../support/nats-server.js';

let nats: RunningNats | undefined;
let ingester: RunningIngester | undefined;
const dir = mkdtempSync(join(tmpdir(), 'intake-nkey-'));

afterAll(async () => {
  await ingester?.stop('SIGKILL');
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('connects with an NKey seed from a file to a server that requires it, and keeps the seed out of the logs', async () => {
  const user = nkeys.createUser();
  const seed = new TextDecoder().decode(user.getSeed());
  const seedFile = join(dir, 'intake.nk');
  writeFileSync(seedFile, `${seed}\n`, { mode: 0o600 });
  nats = await startNats({ config: `authorization { users = [ { nkey: "${user.getPublicKey()}" } ] }` });
  ingester = await startIngester(handoffConfig(nats, { jetstream: { nkeySeedFile: seedFile } }));

  const res = await post(
    `${ingester.url}/events/webhook_demo`,
    { source: 'signed', severity: 3 },
    { authorization: basic(DEMO.user, DEMO.password) },
  );
  expect(res.json()).toMatchObject({ response: { processed: 1, cached: 0, received: 1 } });
  const stored = await readStream(nats.url, 'INTAKE_EVENTS', { authenticator: nkeyAuthenticator(user.getSeed()) });
  expect(stored.map((s) => s.event.source)).toEqual(['signed']);
  expect(ingester.stderr() + ingester.stdout()).not.toContain(seed);
}, 60_000);

it('spools, and logs why, while the server refuses the ingester for lack of credentials', async () => {
  const server = await startNats({
    config: `authorization { users = [ { nkey: "${nkeys.createUser().getPublicKey()}" } ] }`,
  });
  const ing = await startIngester(handoffConfig(server, { spoolDir: join(dir, 'spool') }));
  try {
    const res = await post(
      `${ing.url}/events/webhook_demo`,
      { source: 'unsigned', severity: 3 },
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    expect(res.json()).toMatchObject({ response: { processed: 0, cached: 1, received: 1 } });
    expect(ing.stderr()).toMatch(/Authorization Violation[^\n]*cannot connect to NATS/);
  } finally {
    await ing.stop('SIGKILL');
    await server.stop();
  }
}, 60_000);
