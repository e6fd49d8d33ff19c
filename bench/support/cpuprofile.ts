/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time and inclusive time per function,
 * and self time per origin (the project's code, each npm package, node internals, GC, idle).
 *
 * Usage: node dist/bench/support/cpuprofile.js FILE.cpuprofile [TOP]
 * Also used by `make bench` in profile mode (BENCH_PROFILE=SCENARIO).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionCost {
  name: string;
  where: string;
  selfMs: number;
  totalMs: number;
}

export interface ProfileSummary {
  totalMs: number;
  functions: FunctionCost[];
  origins: Array<{ origin: string; selfMs: number }>;
}

/** Where a frame's code comes from: the project, an npm package, node itself, or V8's pseudo-frames. */
export function originOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  const own = /\/dist\/([^/]+)\//.exec(url);
  if (own) return `intake:${own[1]}`;
  return url;
}

function shortUrl(url: string): string {
  const pkg = /node_modules\/(.*)$/.exec(url);
  if (pkg) return pkg[1] as string;
  const own = /\/dist\/(.*)$/.exec(url);
  if (own) return own[1] as string;
  return url.replace(/^file:\/\//, '');
}

/** Only samples taken within [startUs, endUs] of the monotonic clock, when given (V8 and process.hrtime share it on Linux). */
export interface Window {
  startUs: number;
  endUs: number;
}

export function summarise(profile: CpuProfile, window?: Window): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const keyOf = (node: ProfileNode): string => {
    const f = node.callFrame;
    return `${f.functionName || '(anonymous)'}\u0000${f.url}\u0000${f.lineNumber}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const origins = new Map<string, number>();
  let totalUs = 0;
  let at = profile.startTime;
  if (window && (window.endUs < profile.startTime || window.startUs > profile.endTime)) {
    throw new Error(
      `the window ${window.startUs}..${window.endUs} µs lies outside the profile (${profile.startTime}..${profile.endTime} µs): not the same clock?`,
    );
  }
  // timeDeltas[i] is the time before sample i; attributing it to sample i is what DevTools does.
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = Math.max(0, profile.timeDeltas[i] ?? 0);
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window.startUs || at > window.endUs)) continue;
    const leaf = byId.get(profile.samples[i] as number);
    if (!leaf) continue;
    totalUs += dt;
    const leafKey = keyOf(leaf);
    self.set(leafKey, (self.get(leafKey) ?? 0) + dt);
    const origin = originOf(leaf.callFrame.url, leaf.callFrame.functionName);
    origins.set(origin, (origins.get(origin) ?? 0) + dt);
    // Inclusive: count each function once per sample, however often it recurs in the stack.
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id) as ProfileNode;
      const key = keyOf(node);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + dt);
    }
  }
  const functions = [...total.entries()].map(([key, totalTime]) => {
    const [name, url, line] = key.split('\u0000') as [string, string, string];
    return {
      name,
      where: url ? `${shortUrl(url)}:${Number(line) + 1}` : '',
      selfMs: (self.get(key) ?? 0) / 1000,
      totalMs: totalTime / 1000,
    };
  });
  functions.sort((a, b) => b.selfMs - a.selfMs);
  const originList = [...origins.entries()]
    .map(([origin, us]) => ({ origin, selfMs: us / 1000 }))
    .sort((a, b) => b.selfMs - a.selfMs);
  return { totalMs: totalUs / 1000, functions, origins: originList };
}

/** `requests`, when given: the requests served in the sampled time, for a µs-per-request column. */
export function formatSummary(s: ProfileSummary, top = 25, requests?: number): string {
  const pct = (ms: number): string => `${((ms / s.totalMs) * 100).toFixed(1)}%`;
  const per = (ms: number): string => (requests ? ` ${((ms * 1000) / requests).toFixed(2)} |` : '');
  const perHead = requests ? ' µs/request |' : '';
  const perAlign = requests ? '---:|' : '';
  const lines = [
    `${(s.totalMs / 1000).toFixed(1)} s sampled. Inclusive time counts callees too; behind fastify's callback-style hooks it`,
    'also counts the hooks and handler that run after them, so read it with care.',
    '',
    ...(requests
      ? [
          `${requests} requests in that time: ${((s.totalMs * 1000) / requests).toFixed(1)} µs of sampled time per request (idle included).`,
          '',
        ]
      : []),
    `top ${top} functions by self time:`,
    '',
    `| self | self % |${perHead} inclusive % | function | where |`,
    `|---:|---:|${perAlign}---:|---|---|`,
  ];
  for (const f of s.functions.slice(0, top)) {
    lines.push(
      `| ${f.selfMs.toFixed(0)} ms | ${pct(f.selfMs)} |${per(f.selfMs)} ${pct(f.totalMs)} | \`${f.name}\` | ${f.where} |`,
    );
  }
  lines.push('', 'self time by origin:', '', `| origin | self | self % |${perHead}`, `|---|---:|---:|${perAlign}`);
  for (const o of s.origins.slice(0, 20))
    lines.push(`| ${o.origin} | ${o.selfMs.toFixed(0)} ms | ${pct(o.selfMs)} |${per(o.selfMs)}`);
  return lines.join('\n');
}

export function summariseFile(path: string, top = 25, window?: Window, requests?: number): string {
  return formatSummary(summarise(JSON.parse(readFileSync(path, 'utf8')) as CpuProfile, window), top, requests);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node dist/bench/support/cpuprofile.js FILE.cpuprofile [TOP]\n');
    process.exit(2);
  }
  process.stdout.write(`${summariseFile(file, top ? Number(top) : 25)}\n`);
}

/**
 * The main thread's profile among those `node --cpu-prof` wrote to `dir`: the files are named
 * CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile and the main thread is thread 0 (a mapping
 * worker's profile is mostly idle and says nothing about the request path). The newest if several.
 */
export function mainThreadProfile(dir: string): string | undefined {
  return readdirSync(dir)
    .filter((n) => /\.\d+\.0\.\d+\.cpuprofile$/.test(n))
    .sort()
    .pop();
}
