/**
 * What protects the listeners themselves, before any route runs: a connection cap below the
 * process's file-descriptor limit, short timeouts for connections that send nothing or send a
 * body too slowly, JSON answers for requests Node itself refuses, and `100 Continue` only once
 * the body's bytes are reserved.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { STATUS_CODES } from '../../common/node-http.js';
import { isIP, type Socket } from 'node:net';
import { headersTooLarge, malformedRequest, requestTimeout, type IntakeError } from '../core/errors.js';

/** Descriptors kept for everything that is not a client connection: files, watchers, the bus. */
const RESERVED_DESCRIPTORS = 64;
/** Connections the admin listener accepts (probes and scrapers, never the public). */
export const ADMIN_MAX_CONNECTIONS = 32;

/** The soft limit on open files (`ulimit -n`), from /proc; undefined where it cannot be read. */
export function openFilesLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (!m || m[1] === 'unlimited') return undefined;
  return Number(m[1]);
}

/**
 * Connections the ingest listener may hold: the descriptor limit minus the admin listener's share
 * and a reserve, so running out of descriptors refuses connections instead of failing elsewhere.
 */
export function ingestConnectionCap(fdLimit: number | undefined, configured?: number): number {
  const ceiling = fdLimit === undefined ? 65_536 : Math.max(8, fdLimit - RESERVED_DESCRIPTORS - ADMIN_MAX_CONNECTIONS);
  return configured === undefined ? ceiling : Math.min(configured, ceiling);
}

export interface TimeoutSettings {
  /** From connection start (or the end of the previous request) until the request's headers are in. */
  headersTimeoutMs: number;
  /** From connection start until the whole request, body included, is in. */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** Options for http(s).createServer: Node checks the timeouts above every this often. */
export const serverTimeoutOptions = (
  t: TimeoutSettings,
): {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
} => ({
  headersTimeout: t.headersTimeoutMs,
  requestTimeout: t.requestTimeoutMs,
  keepAliveTimeout: t.keepAliveTimeoutMs,
  connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(t.headersTimeoutMs / 4))),
});

/**
 * Node answers malformed requests, oversized headers and timeouts itself, in plain text. This
 * answers them in the catalogue's JSON shape, with the security headers, then closes.
 */
export function clientErrorHandler(
  securityHeaders: Readonly<Record<string, string>>,
  answeredBeforeBody: (socket: Socket) => boolean,
): (err: NodeJS.ErrnoException, socket: Socket) => void {
  const answer = answerAndClose(securityHeaders);
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // The request was answered already, its body still arriving (a refusal before the body was
    // read): the error is about that body (its sender closed mid-way, or its time ran out), and a
    // second answer would be garbage to the sender. Closing is all that is left; a refused
    // stranger that drops each upload after its 429 costs no second answer.
    if (answeredBeforeBody(socket)) {
      socket.destroy();
      return;
    }
    const e =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? requestTimeout()
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? headersTooLarge()
          : malformedRequest();
    answer(socket, e);
  };
}

/**
 * Writes a catalogue error straight to the socket, with the security headers, and closes it: for
 * answers given while Node or fastify is still reading the request (its headers, or a body that
 * arrives too slowly: http/upload-rate.ts), where no response object can be used.
 */
export function answerAndClose(
  securityHeaders: Readonly<Record<string, string>>,
): (socket: Socket, e: IntakeError) => void {
  const extra = Object.entries(securityHeaders)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (socket, e) => {
    const body = e.renderedBody();
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${e.statusCode} ${STATUS_CODES[e.statusCode]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${extra}\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

/** How much of a refused body, as a multiple of the body limit, is read and dropped to keep the connection. */
const DRAINED_BODY_LIMITS = 4;

/**
 * After a 413 decided from the declared Content-Length (before any byte of the body was read),
 * whether to keep the connection: node then reads the body and drops it, and the sender reads its
 * 413 like any answer. Closing instead, as fastify does, resets a sender that is still writing
 * its body, which then sees a broken pipe rather than the answer. A body much larger than the
 * limit, or one the sender holds back for `100 Continue`, is not worth waiting for: closed.
 */
export function keepsConnectionAfterTooLarge(req: IncomingMessage, bodyLimit: number): boolean {
  const declared = Number(req.headers['content-length']);
  return (
    !expectsContinue(req) &&
    Number.isSafeInteger(declared) &&
    declared > bodyLimit &&
    declared <= DRAINED_BODY_LIMITS * bodyLimit
  );
}

/**
 * Node answers `Expect: 100-continue` at once unless someone listens for it. Route such requests
 * like any other instead; the listener sends `100 Continue` once the sender has authenticated (or,
 * for a signed integration, passed its header checks) and the body's bytes are reserved, so a sender
 * is never invited to upload a body that would be refused.
 */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
}

export function expectsContinue(req: IncomingMessage): boolean {
  const expect = req.headers.expect;
  return typeof expect === 'string' && expect.toLowerCase() === '100-continue';
}

const MAX_FORWARDED_FOR = 1024;

/**
 * With a trusted proxy, X-Forwarded-For decides the address the throttle sees: it must be a short
 * list of IP addresses. Anything else is refused before fastify parses it (a long value of
 * garbage would otherwise become a huge throttle key).
 */
export function forwardedForProblem(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(',') : value;
  if (text.length > MAX_FORWARDED_FOR) return `X-Forwarded-For is longer than ${MAX_FORWARDED_FOR} characters`;
  for (const part of text.split(',')) {
    if (isIP(part.trim()) === 0) return 'X-Forwarded-For must be a comma-separated list of IP addresses';
  }
  return undefined;
}
