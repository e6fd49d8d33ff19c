/**
 * An open-loop load generator for latency measurement (run as its own process by the benchmarks).
 *
 * Requests go out evenly spaced at RATE a second whatever the answers (autocannon's `-R` sends each
 * second's quota in a burst and reports whole milliseconds, which measures its own bursts more
 * than the server). Latency is counted from the moment a request was due, not from when it went
 * out, so a server that stalls the sender is charged for the wait (no coordinated omission).
 *
 * The generator itself must add as little noise as it can: it writes one prepared buffer per
 * request on plain keep-alive sockets and reads answers by status line and Content-Length, so its
 * event loop allocates almost nothing (an HTTP client library's per-request objects made its own
 * garbage collections show up in the p99). The first WARM_UP_SECONDS of sends open the connections
 * and warm both ends' code; they go out on the same schedule but are not counted.
 *
 *   node open-loop.js <url> <authorization> <body> <rate> <seconds> [connections]
 *
 * Prints one JSON line: { rps, p50, p99, byStatus, errors } with latencies in milliseconds; with
 * OPEN_LOOP_SAMPLES=1 also `samples`, every counted latency in whole microseconds (in the order
 * answered), so that a benchmark can pool the samples of several runs before taking a percentile.
 * OPEN_LOOP_HEADERS, a JSON object, adds request headers (a signature, say); OPEN_LOOP_VARIANTS=N
 * prepares N requests, the body's `%i` replaced by 0 to N-1, and sends them in turn (a new series
 * in each data point, say).
 */
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

const WARM_UP_SECONDS = 1;
const HEADER_END = Buffer.from('\r\n\r\n');

interface Args {
  url: URL;
  authorization: string;
  body: string;
  rate: number;
  seconds: number;
  connections: number;
}

function parseArgs(argv: string[]): Args {
  const [url, authorization, body, rate, seconds, connections] = argv;
  if (!url || !authorization || body === undefined || !rate || !seconds) {
    throw new Error('usage: open-loop <url> <authorization> <body> <rate> <seconds> [connections]');
  }
  return {
    url: new URL(url),
    authorization,
    body,
    rate: Number(rate),
    seconds: Number(seconds),
    connections: Number(connections ?? 32),
  };
}

/**
 * One keep-alive connection with at most one request in flight; `onAnswer` gets the status code.
 * A connection the server closed is opened again (a request it was carrying counts as an error).
 */
class Connection {
  private socket: Socket;
  private pending: Buffer = Buffer.alloc(0);
  private busy = false;
  private dueAt = 0;
  private closed = false;

  constructor(
    private readonly url: URL,
    private readonly onAnswer: (status: number, dueAt: number) => void,
    private readonly onError: () => void,
  ) {
    this.socket = this.open();
  }

  send(request: Buffer, dueAt: number): void {
    this.busy = true;
    this.dueAt = dueAt;
    this.socket.write(request);
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private open(): Socket {
    const socket = connect(Number(this.url.port), this.url.hostname);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => {});
    socket.on('close', () => this.reopen());
    return socket;
  }

  private read(chunk: Buffer): void {
    // Bytes with no request in flight (a server's 408 on an idle connection) answer nothing of ours.
    if (!this.busy) return;
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const headerEnd = this.pending.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = this.pending.toString('latin1', 0, headerEnd);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.pending.length < headerEnd + 4 + length) return;
    this.pending = this.pending.subarray(headerEnd + 4 + length);
    this.busy = false;
    this.onAnswer(Number(head.slice(9, 12)), this.dueAt);
  }

  private reopen(): void {
    if (this.closed) return;
    this.pending = Buffer.alloc(0);
    this.socket = this.open();
    if (this.busy) {
      this.busy = false;
      this.onError();
    }
  }
}

const percentile = (sorted: Float64Array, q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

async function run(a: Args): Promise<void> {
  const extra = Object.entries(JSON.parse(process.env.OPEN_LOOP_HEADERS || '{}') as Record<string, string>)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const prepare = (body: string): Buffer =>
    Buffer.from(
      `POST ${a.url.pathname} HTTP/1.1\r\nhost: ${a.url.host}\r\nauthorization: ${a.authorization}\r\n${extra}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  const variants = Number(process.env.OPEN_LOOP_VARIANTS || 1);
  const requests =
    variants > 1
      ? Array.from({ length: variants }, (_, i) => prepare(a.body.replaceAll('%i', String(i))))
      : [prepare(a.body)];
  const warmUp = Math.round(a.rate * WARM_UP_SECONDS);
  const total = warmUp + Math.round(a.rate * a.seconds);
  const latencies = new Float64Array(total - warmUp);
  const byStatus: Record<string, number> = {};
  let counted = 0;
  let answered = 0;
  let errors = 0;
  let sent = 0;
  let backlog = 0; // requests due while every connection was busy; sent as connections free up

  const start = performance.now();
  const interval = 1000 / a.rate;
  const dueAt = (i: number): number => start + i * interval;
  const connections: Connection[] = [];
  const idle: Connection[] = [];
  const sendNext = (c: Connection): void => {
    c.send(requests[sent % requests.length] as Buffer, dueAt(sent));
    sent++;
  };
  const release = (c: Connection): void => {
    if (backlog > 0) {
      backlog--;
      sendNext(c);
    } else idle.push(c);
  };
  for (let i = 0; i < a.connections; i++) {
    const c: Connection = new Connection(
      a.url,
      (status, due) => {
        if (answered++ >= warmUp) {
          latencies[counted++] = performance.now() - due;
          byStatus[status] = (byStatus[status] ?? 0) + 1;
        }
        release(c);
      },
      () => {
        if (answered++ >= warmUp) errors++;
        release(c);
      },
    );
    connections.push(c);
    idle.push(c);
  }

  // Idle connections are used in turn (first in, first out) so that none sits idle long enough
  // for the server's keep-alive timeout. A timer sends every request that has come due; the schedule, not the timer, decides how many,
  // so a late tick catches up instead of drifting.
  let due = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (due < total && dueAt(due) <= now) {
        due++;
        const c = idle.shift();
        if (c) sendNext(c);
        else backlog++;
      }
      if (due < total) setTimeout(tick, Math.max(0, dueAt(due) - performance.now()));
      else resolve();
    };
    tick();
  });
  const deadline = performance.now() + 30_000;
  while (answered < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const elapsed = (performance.now() - start) / 1000 - WARM_UP_SECONDS;
  for (const c of connections) c.close();

  const sorted = latencies.slice(0, counted).sort();
  const result = {
    rps: counted / elapsed,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    byStatus,
    errors: errors + Math.max(0, total - answered),
    ...(process.env.OPEN_LOOP_SAMPLES === '1'
      ? { samples: Array.from(latencies.subarray(0, counted), (ms) => Math.round(ms * 1000)) }
      : {}),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

run(parseArgs(process.argv.slice(2))).catch((err: Error) => {
  process.stderr.write(`open-loop: ${err.message}\n`);
  process.exit(1);
});
