/**
 * Keeping a dead letter (a mapping failure's 422, standalone: the SQLite file) flushes the disk off
 * the request thread, through the built ingester: every fsync/fdatasync of the dead letters' files
 * while a letter is kept comes from another thread than the event loop's (libuv's pool), and the
 * letter is still kept before the 422 (listed at once). Before, SQLite's commit fdatasynced the WAL
 * on the request thread (synchronous=FULL), 2-8 ms on this machine's disk, during which every
 * tenant's requests waited: a tenant whose expressions run to the time limit keeps a letter a
 * second.
 *
 * Observed with strace attached to every thread of the ingester (skipped where strace is absent).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startIngester, type RunningIngester } from '../support/ingester.js';
import { flushesDuring, hasStrace } from '../support/strace.js';
import { integration, listLetters, sendAs } from './support.js';

jest.setTimeout(60_000);

const dirs: string[] = [];
let ing: RunningIngester | undefined;
afterAll(async () => {
  await ing?.stop('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

(hasStrace ? it : it.skip)(
  'keeps a letter before its 422 without flushing the disk on the request thread',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'intake-e2e-dl-flush-'));
    dirs.push(dir);
    ing = await startIngester((c) => {
      (c.routes as unknown[]).push(integration('broken', 'team-a'));
      c.sinks = { log: { path: join(dir, 'events.jsonl') } };
      c.deadLetter = { path: join(dir, 'deadletter.sqlite') };
    });
    const pid = ing.child.pid as number;
    // The first letter opens the store (its reserve file is written and flushed once, at start).
    expect((await sendAs(ing, 'broken', { hostname: 'a', level: 'info' })).status).toBe(422);

    const flushes = (
      await flushesDuring(pid, async () => {
        for (let i = 0; i < 3; i++) {
          const res = await sendAs(ing as RunningIngester, 'broken', { hostname: `b-${i}`, level: 'info' });
          expect(res.status).toBe(422);
          expect(res.text).toMatch(/kept for replay as dead letter/);
        }
        // The letters were kept before their 422s: listed at once.
        expect((await listLetters(ing as RunningIngester)).count).toBe(4);
      })
    )?.filter((f) => /deadletter/.test(f.line));
    if (!flushes) return;
    // The WAL was flushed once per letter at least (so the check below looked at something) ...
    expect(flushes.length).toBeGreaterThanOrEqual(3);
    // ... and never by the event loop's thread, whose thread id is the process id.
    const onLoop = flushes.filter((f) => f.thread === pid);
    expect(onLoop).toEqual([]);
  },
);
