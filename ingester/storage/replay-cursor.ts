/**
 * How far a store has been handed on, kept where writing it needs no new disk space: a small
 * file created once, while there is room, and then only overwritten in place. A store on a full
 * disk cannot delete its rows (a delete is a write: WAL frames), but it can always move this
 * cursor past them, so what was handed on is never handed on again, and once the cursor is past
 * every row the store's files can be removed whole, which gives all their space back.
 *
 * Two slots in different sectors, written in turn, each with a checksum: a write torn by a crash
 * leaves the other slot, one step behind (that step is handed on again, which the bus's message
 * id deduplicates). A slot also says whether the store's files are being removed: a crash in the
 * middle of that leaves files the next start must remove too (a database without its WAL, or a
 * WAL without its database, is not a database).
 */
import { closeSync, fdatasyncSync, openSync, readSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';

const FILE_BYTES = 4096;
const SLOT_BYTES = 64;
const SLOT_OFFSETS = [0, 512] as const;

export class ReplayCursor {
  /** Rows with a seq up to this one have been handed on (0: none). */
  private seq = 0;
  private resetting = false;
  /** Writes so far (both slots): the newer slot has the higher count. */
  private writes = 0;
  private nextSlot = 0;
  private usable = false;

  constructor(readonly path: string) {}

  /**
   * Reads the cursor, creating its file (fsynced, full size) when missing. False when it cannot
   * be created (the disk is full already): the store then works without it, as before.
   */
  open(): boolean {
    let fd: number | undefined;
    try {
      try {
        fd = openSync(this.path, 'r+');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        fd = openSync(this.path, 'w+', 0o600);
        writeSync(fd, Buffer.alloc(FILE_BYTES, 0x20), 0, FILE_BYTES, 0);
        fdatasyncSync(fd);
      }
      const slots = SLOT_OFFSETS.map((offset) => {
        const b = Buffer.alloc(SLOT_BYTES);
        readSync(fd as number, b, 0, SLOT_BYTES, offset);
        return parseSlot(b.toString('latin1'));
      });
      const [a, b] = slots as [Slot | undefined, Slot | undefined];
      // The newer slot wins (a higher seq, or the same seq written later: the reset flag's change).
      const newer = (a?.write ?? -1) >= (b?.write ?? -1) ? 0 : 1;
      const slot = slots[newer];
      this.seq = slot?.seq ?? 0;
      this.resetting = slot?.resetting ?? false;
      this.writes = slot?.write ?? 0;
      this.nextSlot = 1 - newer;
      this.usable = true;
    } catch {
      this.usable = false;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    return this.usable;
  }

  get position(): number {
    return this.seq;
  }

  get available(): boolean {
    return this.usable;
  }

  /** The store's files were being removed when the process stopped: remove what is left of them. */
  get resetPending(): boolean {
    return this.resetting;
  }

  /** Moves the cursor to `seq` (never back) and syncs it; throws when the write fails. */
  advance(seq: number): void {
    if (seq > this.seq) this.write(seq, this.resetting);
  }

  /** Says (durably) that the store's files are about to be removed; call endReset once they are new. */
  beginReset(): void {
    this.write(this.seq, true);
  }

  endReset(): void {
    if (this.resetting) this.write(this.seq, false);
  }

  private write(seq: number, resetting: boolean): void {
    if (!this.usable) throw new Error(`replay cursor ${this.path} is not available`);
    const fd = openSync(this.path, 'r+');
    try {
      writeSync(fd, formatSlot({ seq, resetting, write: this.writes + 1 }), SLOT_OFFSETS[this.nextSlot], 'latin1');
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.writes++;
    this.seq = seq;
    this.resetting = resetting;
    this.nextSlot = 1 - this.nextSlot;
  }
}

interface Slot {
  seq: number;
  resetting: boolean;
  /** Counts writes, so the newer of the two slots is known. */
  write: number;
}

function formatSlot(s: Slot): string {
  const body = `seq=${s.seq};reset=${s.resetting ? 1 : 0};write=${s.write}`;
  return `${body};crc=${crc32(body).toString(16)}`.padEnd(SLOT_BYTES - 1, ' ') + '\n';
}

function parseSlot(text: string): Slot | undefined {
  const m = /^(seq=(\d+);reset=([01]);write=(\d+));crc=([0-9a-f]+) *\n$/.exec(text);
  if (!m || crc32(m[1] as string).toString(16) !== m[5]) return undefined;
  return { seq: Number(m[2]), resetting: m[3] === '1', write: Number(m[4]) };
}
