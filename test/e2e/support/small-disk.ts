/**
 * Small real filesystems for the tests of stores on a full disk (the spool, the outbox, the dead
 * letters): a tmpfs fills up with ENOSPC as a node's disk would, not a quota. Mounting needs root;
 * the tests skip without it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const asRoot = process.getuid?.() === 0;

/** Mounts and unmounts the tmpfs of one test file. */
export class SmallDisks {
  private readonly mounts: string[] = [];

  /** A fresh tmpfs of `size` (`3m`). */
  mount(size: string): string {
    const mountPoint = mkdtempSync(join(tmpdir(), 'intake-small-disk-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', mountPoint]);
    this.mounts.push(mountPoint);
    return mountPoint;
  }

  unmountAll(): void {
    for (const m of this.mounts.splice(0)) {
      execFileSync('umount', [m]);
      rmSync(m, { recursive: true, force: true });
    }
  }
}

/** Something else on the volume (`neighbour.bin`) takes all but `leave` bytes of it: the node's disk filling up. */
export function fillAllBut(mountPoint: string, leave: number): void {
  const s = statfsSync(mountPoint);
  const free = s.bavail * s.bsize;
  writeFileSync(join(mountPoint, 'neighbour.bin'), Buffer.alloc(Math.max(0, free - leave), 1));
}
