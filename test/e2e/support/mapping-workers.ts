/** Finding a process's mapping workers in /proc: started by its spawner (api/mapping/worker-spawner.ts), not by it. */
import { readdirSync, readFileSync } from 'node:fs';

/** Each process's parent and command line, for the processes running now. */
function processes(): Array<{ pid: number; ppid: number; cmdline: string }> {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return [{ pid: Number(d), ppid, cmdline: readFileSync(`/proc/${d}/cmdline`, 'utf8') }];
      } catch {
        return []; // it ended meanwhile
      }
    });
}

/** The mapping workers' spawners that `pid` started. */
export function spawnersOf(pid: number): number[] {
  return processes()
    .filter((p) => p.ppid === pid && p.cmdline.includes('worker-spawner.js'))
    .map((p) => p.pid);
}

/** `pid`'s mapping worker processes: those its spawners started (and, to catch a regression, any it started itself). */
export function mappingWorkerPids(pid: number): number[] {
  const all = processes();
  const parents = new Set([
    pid,
    ...all.filter((p) => p.ppid === pid && p.cmdline.includes('worker-spawner.js')).map((p) => p.pid),
  ]);
  return all.filter((p) => parents.has(p.ppid) && p.cmdline.includes('mapping-worker.js')).map((p) => p.pid);
}
