import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { HandoffMetrics } from '../../../../ingester/sinks/handoff-metrics.js';
import { SpoolReplayer } from '../../../../ingester/sinks/spool-replayer.js';
import { Spool, type SpooledRow } from '../../../../ingester/sinks/spool.js';
import { waitFor } from '../../../support/waiting.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function spoolWith(ids: string[]): Promise<Spool> {
  const dir = mkdtempSync(join(tmpdir(), 'intake-replay-'));
  dirs.push(dir);
  const spool = new Spool(dir, 1 << 20);
  await spool.append(ids.map((id) => ({ id, subject: 's', payload: '{}' })));
  return spool;
}

const options = { batch: 2, backoffMinMs: 5, backoffMaxMs: 20 };

describe('spool replayer', () => {
  it('hands events to the bus oldest first and deletes each only after its PubAck', async () => {
    const spool = await spoolWith(['a', 'b', 'c', 'd', 'e']);
    const seen: string[] = [];
    let refuseC = true;
    const target = {
      isUp: () => true,
      publish: async (rows: SpooledRow[]) =>
        rows.map((r) => {
          seen.push(r.id);
          if (r.id === 'c' && refuseC) {
            refuseC = false;
            return false;
          }
          return true;
        }),
    };
    const replayer = new SpoolReplayer(
      spool,
      target,
      options,
      new HandoffMetrics(new Registry(), spool),
      pino({ level: 'silent' }),
    );
    replayer.start();
    await waitFor('spool empty', async () => spool.depth === 0, 5000, 5);
    await replayer.stop();
    expect(seen).toEqual(['a', 'b', 'c', 'd', 'c', 'e']);
    spool.close();
  });

  it('publishes nothing while the bus is down and starts when woken', async () => {
    const spool = await spoolWith(['a']);
    let up = false;
    const published: string[] = [];
    const target = {
      isUp: () => up,
      publish: async (rows: SpooledRow[]) => rows.map((r) => (published.push(r.id), true)),
    };
    const replayer = new SpoolReplayer(
      spool,
      target,
      { ...options, backoffMinMs: 60_000, backoffMaxMs: 60_000 },
      new HandoffMetrics(new Registry(), spool),
      pino({ level: 'silent' }),
    );
    replayer.start();
    await new Promise((r) => setTimeout(r, 50));
    expect(published).toEqual([]);
    up = true;
    replayer.wake();
    await waitFor('replayed', async () => spool.depth === 0, 2000, 5);
    await replayer.stop();
    expect(published).toEqual(['a']);
    spool.close();
  });

  it('deletes acknowledged rows it could not delete (a full disk) before publishing anything again', async () => {
    const spool = await spoolWith(['a', 'b', 'c']);
    const published: string[] = [];
    const remove = spool.remove.bind(spool);
    let failures = 3;
    spool.remove = (rows) => {
      if (rows.length > 0 && failures-- > 0) throw new Error('database or disk is full');
      remove(rows);
    };
    const target = {
      isUp: () => true,
      publish: async (rows: SpooledRow[]) => rows.map((r) => (published.push(r.id), true)),
    };
    const replayer = new SpoolReplayer(
      spool,
      target,
      options,
      new HandoffMetrics(new Registry(), spool),
      pino({ level: 'silent' }),
    );
    replayer.start();
    await waitFor('spool empty', async () => spool.depth === 0, 5000, 5);
    await replayer.stop();
    expect(failures).toBeLessThan(0);
    expect(published).toEqual(['a', 'b', 'c']);
    spool.close();
  });
});
