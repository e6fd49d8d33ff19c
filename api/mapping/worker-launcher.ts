/**
 * Starts the mapping pool's worker processes without forking the ingester (worker-spawner.ts says
 * why), and carries the pool's messages to and from each worker over a socket of its own.
 *
 * - The spawner: one small process per pool, started with the pool's first worker (the one fork
 *   this process makes) and again if it ever ends. It starts each worker and reports its pid, its
 *   end and the end of its stderr.
 * - The socket: a listening Unix socket of this process (Linux's abstract namespace: no file, so
 *   no writable directory is needed; elsewhere a file in a private temporary directory). A worker
 *   connects and says which one it is with a token that only it was given (in its environment,
 *   which only the same user can read); a connection that does not, in time, is closed. Another
 *   process of the pod (a sidecar shares the network namespace) cannot pose as a worker.
 * - A RemoteWorker is what the pool holds for each worker: `send`, 'message', 'error', and 'exit'
 *   then 'close' once the spawner reported the end and the socket has delivered the worker's last
 *   answer. kill() signals the worker by its pid at once (not through the spawner, which runs at
 *   nice 19 and may wait for a core), or asks the spawner while the pid is not known yet.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameReader, writeFrame } from './frames.js';
import {
  addressForEnv,
  WORKER_ID_ENV,
  WORKER_SOCKET_ENV,
  WORKER_TOKEN_ENV,
  type WorkerHello,
} from './worker-connection.js';
import type { SpawnerReport, SpawnerRequest } from './worker-spawner.js';

/** A hello is small; a connection gets this long to say it. */
const HELLO_BYTES = 1024;
const HELLO_MS = 10_000;
/** The largest message either side sends: a batch or its answers (payloads are bounded far below). */
const MAX_FRAME_BYTES = 1024 * 1024 * 1024;

/** One worker process as the pool sees it. */
export class RemoteWorker extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  /** The end of what the worker wrote to stderr, known once it ended. */
  stderr = '';
  private socket: Socket | undefined;
  private referenced = false;
  private exitReport: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private ended = false;

  constructor(
    readonly id: number,
    readonly token: Buffer,
    private readonly askSpawner: (request: SpawnerRequest) => void,
  ) {
    super();
  }

  /** Sends one message (a batch, a yield); dropped when the worker is not connected (it has ended). */
  send(message: unknown): void {
    if (this.socket && !this.socket.destroyed) writeFrame(this.socket, message);
  }

  /** Keeps this process alive while the worker evaluates (ref) or not (unref). */
  ref(): void {
    this.referenced = true;
    this.socket?.ref();
  }

  unref(): void {
    this.referenced = false;
    this.socket?.unref();
  }

  /** SIGKILL: by pid once known (at once), else through the spawner. */
  kill(): void {
    if (this.ended || this.exitReport) return;
    if (this.pid === undefined) return this.askSpawner({ kill: this.id });
    try {
      process.kill(this.pid, 'SIGKILL');
    } catch {
      // Already gone: its end is on its way from the spawner.
    }
  }

  /** Whether the process has ended (and its last answer was read). */
  get hasEnded(): boolean {
    return this.ended;
  }

  /** Whether the worker has connected (a second connection with its token is refused). */
  get connected(): boolean {
    return this.socket !== undefined;
  }

  attach(socket: Socket, reader: FrameReader): void {
    this.socket = socket;
    if (this.referenced) socket.ref();
    else socket.unref();
    reader.maxBytes = MAX_FRAME_BYTES;
    reader.decoding = 'v8';
    reader.onMessage = (m) => this.emit('message', m);
    socket.once('close', () => this.maybeEnd());
  }

  started(pid: number): void {
    this.pid = pid;
  }

  /** The spawner could not start it. */
  failed(message: string): void {
    this.exitCode = -1;
    this.ended = true;
    this.emit('error', new Error(message));
    this.emit('exit', null, null);
    this.emit('close', null, null);
  }

  /** The spawner reported its end (or is gone itself: then `stderr` is empty). */
  exited(code: number | null, signal: NodeJS.Signals | null, stderr: string): void {
    if (this.exitReport || this.ended) return;
    this.exitReport = { code, signal };
    this.stderr = stderr;
    this.maybeEnd();
  }

  /** Ended once the spawner said so and the socket (if it connected) is closed: the spawner's news can overtake the socket's last bytes. */
  private maybeEnd(): void {
    if (this.ended || !this.exitReport) return;
    if (this.socket && !this.socket.destroyed) return;
    this.ended = true;
    this.exitCode = this.exitReport.code;
    this.signalCode = this.exitReport.signal;
    this.emit('exit', this.exitCode, this.signalCode);
    this.emit('close', this.exitCode, this.signalCode);
  }
}

export class WorkerLauncher {
  private spawner: ChildProcess | undefined;
  private server: Server | undefined;
  private socketDir: string | undefined;
  private address = '';
  private nextId = 1;
  private readonly workers = new Map<number, RemoteWorker>();

  /** `spawnerPath`: the spawner's script (worker-spawner.js, next to the worker's). */
  constructor(private readonly spawnerPath: string) {}

  /** The socket workers connect to (for tests: a stranger's connection is refused). */
  get socketAddress(): string {
    return this.address;
  }

  /** The spawner's pid, once started (for tests and diagnostics). */
  get spawnerPid(): number | undefined {
    return this.spawner?.pid;
  }

  /** Starts `argv` with `env` (plus where and who it is) through the spawner. */
  start(argv: readonly string[], env: NodeJS.ProcessEnv): RemoteWorker {
    const id = this.nextId++;
    const token = randomBytes(32);
    const worker = new RemoteWorker(id, token, (r) => this.ask(r));
    this.workers.set(id, worker);
    worker.once('close', () => this.workers.delete(id));
    this.listen();
    this.ask({
      spawn: id,
      argv: [...argv],
      env: {
        ...env,
        [WORKER_SOCKET_ENV]: addressForEnv(this.address),
        [WORKER_ID_ENV]: String(id),
        [WORKER_TOKEN_ENV]: token.toString('hex'),
      },
    });
    return worker;
  }

  /** Runs a command whose outcome the pool does not wait for (chrt's demotion of a worker). */
  run(argv: readonly string[]): void {
    this.ask({ run: [...argv] });
  }

  /** Ends the spawner (it kills what it started) and stops listening. */
  close(): void {
    const spawner = this.spawner;
    this.spawner = undefined;
    if (spawner?.connected) spawner.disconnect();
    this.server?.close();
    this.server = undefined;
    if (this.socketDir) rmSync(this.socketDir, { recursive: true, force: true });
    this.socketDir = undefined;
  }

  private ask(request: SpawnerRequest): void {
    this.spawnerProcess().send(request);
  }

  private spawnerProcess(): ChildProcess {
    if (this.spawner) return this.spawner;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    // Not through chrt (a chrt that may not set a policy here must not stop the pool, which then
    // starts its workers without it): the spawner lowers itself to nice 19.
    const spawner = fork(this.spawnerPath, [], {
      execArgv: ['--max-old-space-size=32'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env,
    });
    this.spawner = spawner;
    // The spawner never keeps this process alive; a worker with an evaluation does (its socket).
    spawner.unref();
    spawner.channel?.unref();
    spawner.on('message', (m: SpawnerReport) => this.report(m));
    spawner.on('error', () => undefined);
    spawner.once('exit', (code, signal) =>
      this.spawnerEnded(
        spawner,
        `the mapping workers' spawner ended (${signal ? `signal ${signal}` : `exit code ${code}`})`,
      ),
    );
    return spawner;
  }

  private report(m: SpawnerReport): void {
    if ('started' in m) this.workers.get(m.started)?.started(m.pid);
    else if ('failed' in m) this.workers.get(m.failed)?.failed(m.message);
    else this.workers.get(m.exited)?.exited(m.code, m.signal, m.stderr);
  }

  /** The spawner is gone: the workers it started are killed and ended; the next start starts another. */
  private spawnerEnded(spawner: ChildProcess, why: string): void {
    if (this.spawner === spawner) this.spawner = undefined;
    for (const worker of [...this.workers.values()]) {
      worker.kill();
      worker.exited(null, 'SIGKILL', why);
    }
  }

  private listen(): void {
    if (this.server) return;
    const server = createServer((socket) => this.connection(socket));
    server.on('error', () => undefined);
    if (process.platform === 'linux') {
      this.address = `\0intake-mapping-${process.pid}-${randomBytes(8).toString('hex')}`;
    } else {
      this.socketDir = mkdtempSync(join(tmpdir(), 'intake-mapping-'));
      this.address = join(this.socketDir, 'workers.sock');
    }
    // A Unix socket is bound and listening when listen() returns: a worker may connect at once.
    server.listen(this.address);
    server.unref();
    this.server = server;
  }

  /** A connection: attached to its worker once it says which one with that worker's token, else closed. */
  private connection(socket: Socket): void {
    socket.unref();
    socket.setNoDelay(true);
    const timer = setTimeout(() => socket.destroy(), HELLO_MS);
    timer.unref();
    // Until it has said which worker it is, a connection's frames are small JSON.
    const reader = new FrameReader(() => undefined, HELLO_BYTES, 'json');
    reader.onMessage = (m) => {
      const hello = m as Partial<WorkerHello>;
      const worker = typeof hello.id === 'number' ? this.workers.get(hello.id) : undefined;
      const token = typeof hello.token === 'string' ? Buffer.from(hello.token, 'hex') : Buffer.alloc(0);
      if (
        !worker ||
        worker.connected ||
        token.length !== worker.token.length ||
        !timingSafeEqual(token, worker.token)
      ) {
        socket.destroy();
        return;
      }
      clearTimeout(timer);
      if (worker.pid === undefined && typeof hello.pid === 'number') worker.started(hello.pid);
      worker.attach(socket, reader);
    };
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        socket.destroy();
      }
    });
    socket.on('error', () => socket.destroy());
  }
}
