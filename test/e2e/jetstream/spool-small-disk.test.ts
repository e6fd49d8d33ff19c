/**
 * A spool whose filesystem filled up drains once the bus is back, whatever the disk: on a 3 MiB
 * filesystem that something else filled too (an emptyDir on a full node disk), the deletes after
 * each PubAck fail with "database or disk is full", and the spool must still hand every
 * acknowledged event to the stream, with or without an ingester restart (kill -9) in between.
 * And an ingester whose spool volume cannot hold `spool.maxBytes` plus the overhead refuses to
 * start, naming the setting and the volume's size.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ROOT } from '../../support/paths.js';
import { freePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';
import { asRoot, fillAllBut, SmallDisks } from '../support/small-disk.js';
import { basic, DEMO, EXAMPLE, post, startIngester, type RunningIngester } from '../support/ingester.js';
import { handoffConfig, metricValue, readStream, startNats, tally, type RunningNats } from '../support/nats-server.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const running: Array<RunningIngester | RunningNats> = [];

afterAll(async () => {
  for (const r of running.reverse()) await ('child' in r ? r.stop('SIGKILL') : r.stop());
  disks.unmountAll();
});

const itAsRoot = asRoot ? it : it.skip;
const disks = new SmallDisks();
const smallFilesystem = (size: string): string => disks.mount(size);

/** The spool on `spoolDir`, 1 MiB, all of it for the one namespace these tests send as. */
const smallSpool =
  (nats: RunningNats, spoolDir: string, maxBytes = MiB) =>
  (c: Record<string, unknown>): void => {
    handoffConfig(nats, { spoolDir, spoolMaxBytes: maxBytes })(c);
    // Replayed ten messages at a time: most of the spool waits behind the first batch's deletes.
    Object.assign(c.spool as Record<string, unknown>, { replayBatch: 10, maxBytesPerNamespace: maxBytes });
  };

const readyz = async (ing: RunningIngester): Promise<{ status: number; body: string }> => {
  const res = await fetch(`${ing.adminUrl}/readyz`);
  return { status: res.status, body: await res.text() };
};

/** One event of ~4 KiB per request, until the ingester refused 10 (at most 1500 requests). */
async function fillSpool(ing: RunningIngester, tag: string): Promise<string[]> {
  const accepted: string[] = [];
  let refused = 0;
  for (let n = 0; n < 1500 && refused < 10; n++) {
    const trace = `${tag}-${n}`;
    const answer = await post(
      `${ing.url}/events/webhook_demo`,
      { source: 'small-disk', severity: 3, description: 'x'.repeat(4096), custom_info: { trace } },
      { authorization: basic(DEMO.user, DEMO.password) },
    );
    if (answer.status === 200) accepted.push(trace);
    else {
      // Refused because the disk is full, not because of any size limit.
      expect(`${answer.status} ${answer.text}`).toMatch(/^503 .*SINK_FAILED/);
      refused++;
    }
  }
  expect(refused).toBe(10);
  return accepted;
}

async function expectAllInStream(nats: RunningNats, ing: RunningIngester, accepted: string[]): Promise<void> {
  await waitFor(
    'spool drained',
    async () => (await metricValue(ing.adminUrl, 'intake_spool_events')) === 0,
    60_000,
    200,
  ).catch(() => undefined);
  const stored = tally(
    (await readStream(nats.url, 'INTAKE_EVENTS')).map((s) => (s.event.custom_info as { trace: string }).trace),
  );
  expect(accepted.filter((t) => !stored.has(t))).toEqual([]);
  expect(await metricValue(ing.adminUrl, 'intake_spool_events')).toBe(0);
  // Duplicates only within the stream's duplicate window, i.e. none in the stream.
  expect([...stored].filter(([, n]) => n > 1)).toEqual([]);
  await waitFor('ready', async () => (await readyz(ing)).status === 200, 20_000, 200);
  // The deletes did fail for lack of disk (what this file is about), and the files were renewed.
  expect(ing.stderr()).toMatch(/the spool cannot delete what the bus acknowledged/);
  expect(ing.stderr()).toMatch(/spool handed on in full/);
}

itAsRoot(
  'drains a spool whose disk is full once the bus is back',
  async () => {
    const disk = smallFilesystem('3m');
    const nats = await startNats();
    running.push(nats);
    const ing = await startIngester(smallSpool(nats, join(disk, 'spool')));
    running.push(ing);
    await nats.kill9();
    fillAllBut(disk, 900 * KiB);

    const accepted = await fillSpool(ing, 'live');
    expect(accepted.length).toBeGreaterThan(20);
    const unready = await readyz(ing);
    expect(unready.status).toBe(503);
    expect(unready.body).toMatch(/spool .* cannot be written/);

    await nats.restart();
    await expectAllInStream(nats, ing, accepted);
  },
  150_000,
);

itAsRoot(
  'drains a spool whose disk is full after an ingester restart (kill -9) on that full disk',
  async () => {
    const disk = smallFilesystem('3m');
    const spoolDir = join(disk, 'spool');
    const nats = await startNats();
    running.push(nats);
    const first = await startIngester(smallSpool(nats, spoolDir));
    running.push(first);
    await nats.kill9();
    fillAllBut(disk, 900 * KiB);
    const accepted = await fillSpool(first, 'before-restart');
    expect(accepted.length).toBeGreaterThan(20);
    await first.stop('SIGKILL');

    // The bus is still down and the disk still full: the new process starts, and says it is unready.
    const second = await startIngester(smallSpool(nats, spoolDir), { waitReady: false });
    running.push(second);
    expect(await metricValue(second.adminUrl, 'intake_spool_events')).toBe(accepted.length);
    expect((await readyz(second)).status).toBe(503);

    await nats.restart();
    await expectAllInStream(nats, second, accepted);
  },
  150_000,
);

itAsRoot(
  'refuses to start when the spool volume cannot hold spool.maxBytes plus its overhead',
  async () => {
    const disk = smallFilesystem('3m');
    const nats = await startNats();
    running.push(nats);
    const config = parse(readFileSync(EXAMPLE, 'utf8')) as Record<string, unknown>;
    smallSpool(nats, join(disk, 'spool'), 64 * MiB)(config);
    const configPath = join(disk, 'intake.yaml');
    writeFileSync(configPath, stringify(config));
    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, 'dist/cmd/intake.js'),
        'ingester',
        '--config',
        configPath,
        '--listen',
        `127.0.0.1:${await freePort()}`,
        '--admin-listen',
        `127.0.0.1:${await freePort()}`,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(
      /intake: spool\.maxBytes \(64 MiB\) plus its overhead .* does not fit on the volume of .*spool \(.* free of 3 MiB\): lower spool\.maxBytes to at most 1\.\d MiB/,
    );
  },
  60_000,
);
