/** `helm template` of charts/intake with the pinned helm (make tools), parsed into its objects. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './paths.js';

export const HELM = resolve(ROOT, '.tools/bin/helm');

/** Renders the chart as release `release` in `namespace`; `args` are helm's (`--set`, `-f`). */
export function renderChart<T extends { kind: string }>(release: string, namespace: string, args: string[]): T[] {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: run make tools`);
  const out = execFileSync(HELM, ['template', release, resolve(ROOT, 'charts/intake'), '-n', namespace, ...args], {
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  return parseAllDocuments(out)
    .map((d) => d.toJS() as T | null)
    .filter((d): d is T => !!d?.kind);
}
