/**
 * The one way a long-running command stops (cmd/run.ts): SIGTERM or SIGINT stop it once, exit 0
 * when stopped, 1 when stopping failed or took too long; SIGHUP reopens files and stops nothing.
 */
import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { stopOnSignals } from '../../../cmd/run.js';

class FakeProcess extends EventEmitter {
  exits: number[] = [];
  private resolveExit: (code: number) => void = () => undefined;
  exited = new Promise<number>((resolve) => (this.resolveExit = resolve));
  exit(code: number): void {
    this.exits.push(code);
    this.resolveExit(code);
  }
}

const logger = () => ({ info: jest.fn(), error: jest.fn() });

describe('stopOnSignals', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('on %s stops once and exits 0', async (signal) => {
    const proc = new FakeProcess();
    const stop = jest.fn(async () => undefined);
    const log = logger();
    stopOnSignals({ stop, logger: log }, proc);
    proc.emit(signal, signal);
    // The other one while stopping does not stop again.
    proc.emit(signal === 'SIGTERM' ? 'SIGINT' : 'SIGTERM', signal === 'SIGTERM' ? 'SIGINT' : 'SIGTERM');
    expect(await proc.exited).toBe(0);
    expect(stop).toHaveBeenCalledTimes(1);
    expect(proc.exits).toEqual([0]);
    expect(log.info).toHaveBeenCalledWith({ signal }, 'signal received');
  });

  it('leaves the same signal again to end the process (no listener left)', () => {
    const proc = new FakeProcess();
    stopOnSignals({ stop: () => new Promise(() => undefined), logger: logger() }, proc);
    expect(proc.listenerCount('SIGTERM')).toBe(1);
    proc.emit('SIGTERM', 'SIGTERM');
    expect(proc.listenerCount('SIGTERM')).toBe(0);
  });

  it('exits 1 when stopping fails, saying why', async () => {
    const proc = new FakeProcess();
    const log = logger();
    stopOnSignals({ stop: async () => Promise.reject(new Error('disk gone')), logger: log }, proc);
    proc.emit('SIGTERM', 'SIGTERM');
    expect(await proc.exited).toBe(1);
    expect(log.error).toHaveBeenCalledWith({ err: { message: 'disk gone' } }, 'shutdown failed');
  });

  it('exits 1 when stopping outlasts its time limit', async () => {
    const proc = new FakeProcess();
    const log = logger();
    stopOnSignals({ stop: () => new Promise(() => undefined), logger: log, timeoutMs: 20 }, proc);
    proc.emit('SIGINT', 'SIGINT');
    expect(await proc.exited).toBe(1);
    expect(log.error).toHaveBeenCalledWith({ timeoutSeconds: 0.02 }, 'shutdown timed out; exiting');
  });

  it('waits as long as stopping takes without a time limit', async () => {
    const proc = new FakeProcess();
    let finish!: () => void;
    stopOnSignals({ stop: () => new Promise<void>((resolve) => (finish = resolve)), logger: logger() }, proc);
    proc.emit('SIGTERM', 'SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(proc.exits).toEqual([]);
    finish();
    expect(await proc.exited).toBe(0);
  });

  it('reopens files on SIGHUP, every time, and stops nothing', () => {
    const proc = new FakeProcess();
    const stop = jest.fn(async () => undefined);
    const hangup = jest.fn();
    stopOnSignals({ stop, logger: logger(), hangup }, proc);
    proc.emit('SIGHUP', 'SIGHUP');
    proc.emit('SIGHUP', 'SIGHUP');
    expect(hangup).toHaveBeenCalledTimes(2);
    expect(stop).not.toHaveBeenCalled();
    expect(proc.exits).toEqual([]);
  });

  it('listens to no SIGHUP without a use for it', () => {
    const proc = new FakeProcess();
    stopOnSignals({ stop: async () => undefined, logger: logger() }, proc);
    expect(proc.listenerCount('SIGHUP')).toBe(0);
  });
});
