/**
 * What the follow-on benchmarks (jetstream, destinations, remote write) share: servers pinned to a
 * CPU and stopped whatever happens, a port probe, peak memory, and the run itself (exit codes
 * run.sh understands: 1 on failure, 130 on SIGINT, 143 when its time limit sends SIGTERM).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';

const children: ChildProcess[] = [];

/** Starts `cmd` on CPU `cpu` (taskset); its stderr tail is printed if it exits with an error. */
export function pinnedServer(name: string, cpu: string, cmd: string, args: string[]): ChildProcess {
  const child = spawn('taskset', ['-c', cpu, cmd, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  child.on('exit', (code) => code && code !== 143 && process.stderr.write(`bench: ${name} exited with ${code}\n${stderr}\n`));
  children.push(child);
  return child;
}

/** A child started elsewhere that must be stopped with the others. */
export function track(child: ChildProcess): ChildProcess {
  children.push(child);
  return child;
}

export const canConnect = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });

export const peakRssMiB = (pid: number | undefined): number => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

function stopChildren(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}

/** Runs a benchmark; every server it started is stopped on exit, failure and signals. `stop` stops the rest (e.g. Prometheus). */
export function runBenchmark(main: () => Promise<void>, stop: () => Promise<void> = async () => {}): void {
  process.on('exit', stopChildren);
  process.on('SIGINT', () => process.exit(130));
  process.on('SIGTERM', () => {
    stopChildren();
    void stop().finally(() => process.exit(143));
  });
  main()
    .catch((err: Error) => {
      process.stderr.write(`bench: ${err.message}\n`);
      process.exitCode = 1;
    })
    .finally(async () => {
      stopChildren();
      await stop();
    });
}

/**
 * Throughput benchmarks measure the ingester, not a tenant's rate limit: every per-tenant rate is
 * set out of reach (the limiter still runs on every request, so its cost is in the figures).
 */
const OUT_OF_REACH = 1_000_000_000;
export const BENCH_TENANT_LIMITS = {
  namespace: { eventsPerSecond: OUT_OF_REACH, eventsBurst: OUT_OF_REACH, dataPointsPerSecond: OUT_OF_REACH, dataPointsBurst: OUT_OF_REACH, mappingCpuMillisPerSecond: OUT_OF_REACH, mappingCpuBurstMillis: OUT_OF_REACH },
  integration: { eventsPerSecond: OUT_OF_REACH, eventsBurst: OUT_OF_REACH },
  apiKey: { dataPointsPerSecond: OUT_OF_REACH, dataPointsBurst: OUT_OF_REACH },
} as const;
