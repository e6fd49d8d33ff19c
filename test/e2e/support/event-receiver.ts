/**
 * An HTTP destination of our own on 127.0.0.1 that records every event it is sent and fails on
 * purpose: answers come from a script (a status with headers, or a connection reset), then from a
 * default; `refuse` picks events it always answers 400 for.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptedAnswer = { status: number; headers?: Record<string, string>; body?: string } | 'reset';

export interface ReceivedRequest {
  atMs: number;
  headers: IncomingHttpHeaders;
  /** The body as sent. */
  body: string;
  events: Array<Record<string, unknown> & { id: string }>;
  answer: ScriptedAnswer;
}

export interface EventReceiver {
  url: string;
  requests: ReceivedRequest[];
  script: ScriptedAnswer[];
  /** Event ids answered with 2xx, with how many times each was accepted. */
  accepted: Map<string, number>;
  refuse: (event: Record<string, unknown>) => boolean;
  /** Milliseconds to wait before answering (a slow receiver). */
  delayMs: number;
  /** When set, the answer to every request the script does not answer (a receiver that is down). */
  failWith?: ScriptedAnswer;
  close(): Promise<void>;
}

export async function startEventReceiver(): Promise<EventReceiver> {
  const r: Omit<EventReceiver, 'url' | 'close'> = {
    requests: [],
    script: [],
    accepted: new Map(),
    refuse: () => false,
    delayMs: 0,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        // Not a delivery (a probe of some other process's whose port this one got): answered, not
        // thrown, so it cannot fail the test that started this receiver.
        return void res.writeHead(404).end();
      }
      const events = (Array.isArray(parsed) ? parsed : [parsed]) as ReceivedRequest['events'];
      const answer: ScriptedAnswer =
        r.script.shift() ??
        r.failWith ??
        (events.some((e) => r.refuse(e))
          ? { status: 400, body: '{"error":"field source is not accepted here"}' }
          : { status: 200 });
      r.requests.push({ atMs: Date.now(), headers: req.headers, body, events, answer });
      setTimeout(() => {
        if (answer === 'reset') return void req.socket.destroy();
        if (answer.status >= 200 && answer.status < 300)
          for (const e of events) r.accepted.set(e.id, (r.accepted.get(e.id) ?? 0) + 1);
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      }, r.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(r, {
    url: `http://127.0.0.1:${port}/hooks/intake`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** A receiver whose answer the test decides per request: the events it was sent, parsed. */
export interface EventHandler {
  /** `http://127.0.0.1:<port>`, without a path: append one when the test tells receivers apart. */
  url: string;
  /** Closes every connection, releasing any response the handler left hanging, then the server. */
  close(): Promise<void>;
}

/**
 * An HTTP destination of our own on 127.0.0.1 that hands each request's events (a JSON array, or
 * one object made an array of one) to `handle`, which answers `res` as the test needs: at once, with
 * a failure, or never (a hanging receiver, held until the ingester's timeout or `close`).
 */
export async function startEventHandler<E = { source: string }>(
  handle: (events: E[], res: ServerResponse, req: IncomingMessage) => void,
): Promise<EventHandler> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      handle((Array.isArray(parsed) ? parsed : [parsed]) as E[], res, req);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
