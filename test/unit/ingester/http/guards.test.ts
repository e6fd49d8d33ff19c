import { BodyBudget } from '../../../../ingester/http/body-budget.js';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import {
  clientErrorHandler,
  forwardedForProblem,
  ingestConnectionCap,
  openFilesLimit,
} from '../../../../ingester/http/guards.js';

describe('openFilesLimit', () => {
  const limits = (soft: string) =>
    `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                 20000                files\n`;
  it('reads the soft limit from /proc/self/limits text', () => expect(openFilesLimit(limits('1024'))).toBe(1024));
  it('treats unlimited and unreadable as unknown', () => {
    expect(openFilesLimit(limits('unlimited'))).toBeUndefined();
    expect(openFilesLimit('nothing here')).toBeUndefined();
  });
  it('reads this process', () => expect(openFilesLimit()).toBeGreaterThan(0));
});

describe('ingestConnectionCap', () => {
  it('stays below the descriptor limit, leaving room for the admin port and files', () => {
    expect(ingestConnectionCap(1024)).toBe(1024 - 64 - 32);
    expect(ingestConnectionCap(50)).toBe(8);
  });
  it('takes a lower configured cap, never a higher one', () => {
    expect(ingestConnectionCap(1024, 100)).toBe(100);
    expect(ingestConnectionCap(1024, 5000)).toBe(928);
    expect(ingestConnectionCap(undefined, 5000)).toBe(5000);
  });
});

describe('forwardedForProblem', () => {
  it('accepts absent headers and lists of addresses', () => {
    expect(forwardedForProblem(undefined)).toBeUndefined();
    expect(forwardedForProblem('192.0.2.1, 2001:db8::1')).toBeUndefined();
  });
  it('refuses anything but addresses, and long values', () => {
    expect(forwardedForProblem('192.0.2.1, evil')).toMatch(/IP addresses/);
    expect(forwardedForProblem('1.1.1.1,'.repeat(200))).toMatch(/longer than 1024/);
  });
});

describe('BodyBudget', () => {
  it('reserves until full, releases once, and always lets one body through', () => {
    const budget = new BodyBudget(100);
    const a = budget.reserve(60) as () => void;
    expect(budget.reserve(60)).toBeUndefined();
    a();
    a();
    expect(budget.heldBytes).toBe(0);
    expect(budget.reserve(500)).toBeDefined();
  });
});

describe('clientErrorHandler', () => {
  /** A connection that records whether the handler answered on it or only closed it. */
  const connection = () =>
    Object.assign(new EventEmitter(), {
      destroyed: false,
      writable: true,
      written: '',
      write(text: string) {
        this.written += text;
        return true;
      },
      destroy() {
        this.destroyed = true;
      },
    });
  const timeout = Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });

  it('closes without a second answer while an answered body still arrives', () => {
    const socket = connection();
    clientErrorHandler({}, () => true)(timeout, socket as unknown as Socket);
    expect(socket.destroyed).toBe(true);
    expect(socket.written).toBe('');
  });

  it('answers in the catalogue shape otherwise, and closes', () => {
    const socket = connection();
    clientErrorHandler({}, () => false)(timeout, socket as unknown as Socket);
    expect(socket.written).toMatch(/^HTTP\/1\.1 408 /);
    expect(socket.destroyed).toBe(true);
  });
});
