/**
 * WAL checkpoints off the event loop. SQLite's auto-checkpoint runs inside the commit that passes
 * its threshold, on the connection that committed: on the event loop, copying the WAL into the
 * database and fsyncing both (16 ms each on a slow disk, one per 4 MiB of WAL; the alert states'
 * random-keyed index writes about a page per new alert). Here the writing connections turn it off
 * and a worker thread with a connection of its own to the same file runs PASSIVE checkpoints
 * (they take no writer lock: the loop keeps committing meanwhile).
 *
 * Durability is unchanged: a checkpoint only copies committed frames, fsyncs the WAL before it
 * copies and the database before the WAL may be restarted (the worker's connection uses
 * synchronous=FULL); what a commit makes durable is still decided by the writing connection.
 *
 * The bound: a WAL restarts from its first frame only when a write begins after a checkpoint
 * copied every frame, which a loop that writes every turn seldom allows while the worker copies.
 * So past `walLimitBytes` the loop checkpoints itself (it is the only writer, so its checkpoint
 * copies everything and the next commit restarts the WAL and cuts the file to half the limit),
 * waiting first for a running worker checkpoint. The WAL file thus stays within `walLimitBytes`
 * and one transaction, as with the auto-checkpoint it replaces; the worker only leaves the loop
 * a shorter tail to copy.
 */
import { closeSync, fstatSync, openSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';

/**
 * The worker: one connection, one PASSIVE checkpoint per request; clears the shared flag (slot 0)
 * when done, and sets slot 1 once its connection is closed.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const flag = new Int32Array(workerData.flag);
const db = new DatabaseSync(workerData.file);
db.exec('PRAGMA synchronous = FULL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    Atomics.store(flag, 1, 1);
    Atomics.notify(flag, 1);
    parentPort.close();
    return;
  }
  if (workerData.delayMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.delayMs);
  try {
    checkpoint.get();
  } catch {
    // Busy (the loop's own checkpoint) or closing: the next request tries again.
  }
  Atomics.store(flag, 0, 0);
  Atomics.notify(flag, 0);
  parentPort.postMessage('done');
});
`;

/** How long the loop waits for the worker's checkpoint before checkpointing beside it anyway. */
const WAIT_FOR_WORKER_MS = 2_000;
/** How long close() waits for the worker's connection to close (the files may be removed next). */
const WAIT_FOR_CLOSE_MS = 5_000;

export interface WalCheckpointerOptions {
  /** Tests only: the worker sleeps this long before each checkpoint (a slow disk). */
  workerDelayMs?: number;
}

export class WalCheckpointer {
  private readonly flag = new Int32Array(new SharedArrayBuffer(8));
  private readonly worker: Worker;
  private walFd: number | undefined;
  private closed = false;
  private workerFailed = false;
  /** The loop's last wait for the worker ran out while this checkpoint still ran (a hung disk). */
  private workerStuck = false;
  private idleWaiters: Array<() => void> = [];
  private heldTimer: NodeJS.Timeout | undefined;
  /** Checkpoints the loop had to run itself (the worker fell behind the limit). */
  loopCheckpoints = 0;

  constructor(
    private readonly file: string,
    readonly walLimitBytes: number,
    options: WalCheckpointerOptions = {},
  ) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file, flag: this.flag.buffer, delayMs: options.workerDelayMs ?? 0 },
    });
    // A worker that cannot open the file leaves checkpoints to the loop (the limit below).
    this.worker.on('error', () => {
      this.workerFailed = true;
      this.markIdle();
      this.wakeWaiters();
    });
    this.worker.on('message', () => {
      this.worker.unref();
      this.workerStuck = false;
      this.wakeWaiters();
    });
    // After the listeners (a listener refs the worker again): a checkpointer never keeps the process up.
    this.worker.unref();
  }

  /** A writing connection: no auto-checkpoint of its own; a restarted WAL is cut to a quarter of the limit. */
  attach(db: DatabaseSync): void {
    db.exec('PRAGMA wal_autocheckpoint = 0');
    db.exec(`PRAGMA journal_size_limit = ${Math.floor(this.walLimitBytes / 4)}`);
  }

  /**
   * After each commit on an attached connection: past half the limit hands the worker a
   * checkpoint, past the limit runs one on the loop.
   */
  afterCommit(db: DatabaseSync): void {
    if (this.closed) return;
    const size = this.walBytes();
    if (size > this.walLimitBytes) this.checkpointOnLoop(db);
    else if (size > this.walLimitBytes / 2 && !this.workerFailed && !this.running) {
      Atomics.store(this.flag, 0, 1);
      // Referenced while it copies: writes held for it are work the process still has to do.
      this.worker.ref();
      this.worker.postMessage('run');
    }
  }

  private get running(): boolean {
    return Atomics.load(this.flag, 0) === 1;
  }

  /**
   * Writes that can wait (the alert states: answered once committed) wait while the worker copies:
   * a WAL restarts only when a write begins after a checkpoint copied every frame. Calls `resume`
   * once the worker is done, or after WAIT_FOR_WORKER_MS if it is not (a hung disk must not hold
   * them for ever: they go on, and past the limit the loop checkpoints), and says whether the
   * caller must wait (not when the worker is idle or stuck).
   */
  holdWrites(resume: () => void): boolean {
    if (this.closed || !this.running || this.workerStuck) return false;
    this.idleWaiters.push(resume);
    if (this.heldTimer === undefined) {
      this.heldTimer = setTimeout(() => {
        this.workerStuck = this.running;
        this.wakeWaiters();
      }, WAIT_FOR_WORKER_MS);
      this.heldTimer.unref();
    }
    return true;
  }

  private wakeWaiters(): void {
    clearTimeout(this.heldTimer);
    this.heldTimer = undefined;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** The WAL file's size: it grows past journal_size_limit only while the WAL is not restarted. */
  walBytes(): number {
    try {
      this.walFd ??= openSync(`${this.file}-wal`, 'r');
      return fstatSync(this.walFd).size;
    } catch {
      return 0;
    }
  }

  private checkpointOnLoop(db: DatabaseSync): void {
    // SQLite does not wait for another connection's checkpoint: wait for the worker's here, once
    // per checkpoint of the worker's (a stuck one is not waited for on every commit).
    if (!this.workerStuck && Atomics.wait(this.flag, 0, 1, WAIT_FOR_WORKER_MS) === 'timed-out') this.workerStuck = true;
    if (!db.isOpen || db.isTransaction) return;
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
    this.loopCheckpoints++;
  }

  private markIdle(): void {
    Atomics.store(this.flag, 0, 0);
    Atomics.notify(this.flag, 0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.wakeWaiters();
    if (!this.workerFailed) {
      this.worker.postMessage('close');
      // Closed before returning: a caller may remove the files, or open them again, next.
      Atomics.wait(this.flag, 1, 0, WAIT_FOR_CLOSE_MS);
    }
    if (this.walFd !== undefined) closeSync(this.walFd);
    this.walFd = undefined;
  }
}
