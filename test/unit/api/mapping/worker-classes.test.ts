/**
 * The two classes of mapping workers (worker-priority.ts, worker-pool.ts): how each is started, how
 * a prompt worker is demoted, and how many of each a pool holds.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { idleWorkers } from '../../../../api/mapping/worker-pool.js';
import { demoteCommand, idleCommand, promptCommand } from '../../../../api/mapping/worker-priority.js';

/** A directory holding executables named `names` (what findOnPath looks for). */
function pathWith(...names: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'intake-unit-classes-'));
  for (const name of names) {
    writeFileSync(join(dir, name), '#!/bin/sh\n');
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

const node = ['/usr/bin/node', 'mapping-worker.js'];
const linux = process.platform === 'linux' ? it : it.skip;

describe('mapping worker classes', () => {
  linux('starts an idle worker through chrt --idle 0, a prompt one through chrt --batch 0', () => {
    const dir = pathWith('chrt');
    expect(idleCommand(node, dir)).toEqual({ argv: [join(dir, 'chrt'), '--idle', '0', ...node], idle: true });
    expect(promptCommand(node, dir)).toEqual({
      argv: [join(dir, 'chrt'), '--batch', '0', ...node],
      idle: false,
    });
  });

  linux('starts either as it is without chrt', () => {
    expect(promptCommand(node, pathWith())).toEqual({ argv: node, idle: false });
    expect(idleCommand(node, pathWith())).toEqual({ argv: node, idle: false });
  });

  linux('demotes every thread of a worker to SCHED_IDLE through chrt, and cannot without it', () => {
    const dir = pathWith('chrt');
    expect(demoteCommand(1234, dir)).toEqual([join(dir, 'chrt'), '--idle', '--all-tasks', '--pid', '0', '1234']);
    expect(demoteCommand(1234, pathWith())).toBeUndefined();
  });

  it('holds half the pool (rounded down) as idle workers, and its only worker in a pool of one', () => {
    expect([1, 2, 3, 4, 5].map(idleWorkers)).toEqual([1, 1, 1, 2, 2]);
  });
});
