/**
 * A real three-server NATS cluster with JetStream on loopback (.tools/bin/nats-server): each
 * server has its own client port, route port and store; any one can be killed with SIGKILL and
 * started again on the same ports and store. The stream's leader is asked of the cluster itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { againIfPortTaken, freePort } from '../../support/ports.js';
import { waitFor } from '../../support/waiting.js';
import { NATS_SERVER } from './nats-server.js';

export interface ClusterServer {
  name: string;
  url: string;
  running(): boolean;
  kill9(): Promise<void>;
  restart(): Promise<void>;
}

export interface RunningNatsCluster {
  servers: ClusterServer[];
  /** Every server's client URL (what an ingester's `sinks.jetstream.url` lists). */
  urls: string[];
  /** The server that leads `stream` now, by name. */
  streamLeader(stream: string): Promise<string>;
  /** Waits until `stream` has a leader and `replicas - 1` current followers. */
  waitStreamHealthy(stream: string, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startNatsCluster(size = 3): Promise<RunningNatsCluster> {
  if (!existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is missing; run make tools`);
  // Six ports picked at once: another test's process may take one before its server listens.
  return againIfPortTaken(() => startNatsClusterOnce(size));
}

async function startNatsClusterOnce(size: number): Promise<RunningNatsCluster> {
  const root = mkdtempSync(join(tmpdir(), 'intake-nats-cluster-'));
  const ports = await Promise.all(
    Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })),
  );
  const servers = ports.map((p, i) => {
    const name = `n${i + 1}`;
    const dir = join(root, name);
    const routes = ports.filter((_, j) => j !== i).map((q) => `nats-route://127.0.0.1:${q.route}`);
    const conf = join(root, `${name}.conf`);
    writeFileSync(
      conf,
      [
        `server_name: ${name}`,
        `listen: "127.0.0.1:${p.client}"`,
        `jetstream { store_dir: ${JSON.stringify(dir)} }`,
        `cluster { name: intake-test, listen: "127.0.0.1:${p.route}", routes: [${routes.map((r) => JSON.stringify(r)).join(', ')}] }`,
      ].join('\n'),
    );
    let child: ChildProcess | undefined;
    let exited: Promise<void> = Promise.resolve();
    let log = '';
    const launch = async (): Promise<void> => {
      log = '';
      const proc = spawn(NATS_SERVER, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
      proc.stdout?.on('data', (d) => (log += d));
      proc.stderr?.on('data', (d) => (log += d));
      exited = new Promise((resolve) => proc.once('exit', () => resolve()));
      child = proc;
      await waitFor(
        `nats-server ${name} ready`,
        async () => {
          if (proc.exitCode !== null) throw new Error(`nats-server ${name} exited: ${log}`);
          return log.includes('Server is ready');
        },
        15_000,
        20,
      );
    };
    const server: ClusterServer & { launch: () => Promise<void> } = {
      name,
      url: `nats://127.0.0.1:${p.client}`,
      running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
      kill9: async () => {
        if (server.running()) child?.kill('SIGKILL');
        await exited;
      },
      restart: launch,
      launch,
    };
    return server;
  });
  try {
    await Promise.all(servers.map((s) => s.launch()));
  } catch (err) {
    await Promise.all(servers.map((s) => s.kill9()));
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  const urls = servers.map((s) => s.url);

  const streamInfo = async (stream: string) => {
    const nc = await connect({ servers: servers.filter((s) => s.running()).map((s) => s.url), timeout: 2000 });
    try {
      return await (await jetstreamManager(nc, { timeout: 2000 })).streams.info(stream);
    } finally {
      await nc.close();
    }
  };
  // JetStream answers only once the servers have elected a meta leader.
  await waitFor(
    'JetStream meta leader',
    async () => {
      const nc = await connect({ servers: urls, timeout: 2000 });
      try {
        await (await jetstreamManager(nc, { timeout: 2000 })).getAccountInfo();
        return true;
      } catch {
        return false;
      } finally {
        await nc.close();
      }
    },
    30_000,
    200,
  );
  return {
    servers,
    urls,
    streamLeader: async (stream) => {
      const leader = (await streamInfo(stream)).cluster?.leader;
      if (!leader) throw new Error(`stream ${stream} has no leader`);
      return leader;
    },
    waitStreamHealthy: async (stream, timeoutMs) => {
      await waitFor(
        `stream ${stream} with a leader and current replicas`,
        async () => {
          try {
            const c = (await streamInfo(stream)).cluster;
            return !!c?.leader && (c.replicas ?? []).length === size - 1 && (c.replicas ?? []).every((r) => r.current);
          } catch {
            return false;
          }
        },
        timeoutMs,
        200,
      );
    },
    stop: async () => {
      await Promise.all(servers.map((s) => s.kill9()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
