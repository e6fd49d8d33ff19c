/** Helpers for the tests on the test cluster's node: helm, pods, Service addresses. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { KUBECONFIG, kubectl, ROOT } from '../integration/support/cluster.js';

const HELM = resolve(ROOT, '.tools/bin/helm');

export function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(HELM, ['--kubeconfig', KUBECONFIG, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

export async function ok(p: Promise<{ code: number; stdout: string; stderr: string }>): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(r.stderr || r.stdout);
  return r.stdout;
}

export interface Pod {
  metadata: { name: string; labels: Record<string, string>; deletionTimestamp?: string };
  status: { conditions: Array<{ type: string; status: string }>; containerStatuses: Array<{ restartCount: number }> };
}

export async function podsOf(namespace: string, selector: string): Promise<Pod[]> {
  const out = await ok(kubectl(['get', 'pods', '-n', namespace, '-l', selector, '-o', 'json']));
  return (JSON.parse(out) as { items: Pod[] }).items.map((p) => ({
    ...p,
    status: { conditions: p.status.conditions ?? [], containerStatuses: p.status.containerStatuses ?? [] },
  }));
}

/** http://<ClusterIP>:<port> of a Service's named port: the host routes the Service range to the node. */
export async function serviceUrl(namespace: string, name: string, port: string): Promise<string> {
  const svc = JSON.parse(await ok(kubectl(['get', 'service', name, '-n', namespace, '-o', 'json']))) as {
    spec: { clusterIP: string; ports: Array<{ name?: string; port: number }> };
  };
  const p = svc.spec.ports.find((x) => x.name === port) ?? svc.spec.ports[0];
  if (!p) throw new Error(`service ${namespace}/${name} has no port ${port}`);
  return `http://${svc.spec.clusterIP}:${p.port}`;
}
