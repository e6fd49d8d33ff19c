/**
 * Where destinations' runtime pauses (pause.ts: by the admin API, auto-pause) are kept, so that a
 * restart does not resume a destination nobody resumed:
 *   - standalone, a small JSON file in the storage directory (`destination-pauses.json`), written
 *     whole and renamed into place (a crash leaves the old file or the new one);
 *   - with the bus, a key-value bucket (pause-kv-store.ts), watched by every replica, so a pause
 *     or resume on one holds on all.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { RuntimePause } from './pause.js';

export interface PauseStore {
  /** Keeps (or, with undefined, forgets) a destination's runtime pause. */
  save(destination: string, pause: RuntimePause | undefined): Promise<void>;
}

/** A kept pause read back: undefined when it is not one (a file edited by hand, an older shape). */
export function readPause(value: unknown): RuntimePause | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Partial<RuntimePause>;
  if ((v.by !== 'admin' && v.by !== 'auto') || typeof v.since !== 'number') return undefined;
  return v as RuntimePause;
}

export class FilePauseStore implements PauseStore {
  private readonly file: string;
  private readonly pauses = new Map<string, RuntimePause>();

  constructor(dir: string) {
    this.file = join(dir, 'destination-pauses.json');
    let kept: Record<string, unknown> = {};
    try {
      kept = JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      // None yet is the usual case; an unreadable one must not stop delivery (nothing is lost: a
      // pause only holds events), but it is not silently taken as "resume everything" either.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new Error(`${this.file} cannot be read (${(err as Error).message}); fix or remove it`);
    }
    for (const [name, value] of Object.entries(kept)) {
      const pause = readPause(value);
      if (pause) this.pauses.set(name, pause);
    }
  }

  /** The pauses kept by an earlier run. */
  load(): ReadonlyMap<string, RuntimePause> {
    return this.pauses;
  }

  async save(destination: string, pause: RuntimePause | undefined): Promise<void> {
    if (pause) this.pauses.set(destination, pause);
    else this.pauses.delete(destination);
    const tmp = `${this.file}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, JSON.stringify(Object.fromEntries(this.pauses), null, 2));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
  }
}
