/**
 * `intake version`: the version (package.json), the commit it was built from (stamped into
 * dist/cmd/build-info.json by the build, cmd/write-build-info.ts; "unknown" without one) and the
 * Node.js it runs on, as helm and kubectl print theirs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { inertText } from '../../common/sender-text.js';
import { outputFormat, outputOption } from '../options.js';
import { columns, formatted } from '../output.js';

export interface VersionInfo {
  version: string;
  commit: string;
  node: string;
}

/** The build-info file beside the built cmd/ modules (dist/cmd/build-info.json). */
const BUILD_INFO = new URL('../build-info.json', import.meta.url);

const readJson = (path: string | URL): Record<string, unknown> | undefined => {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

/** The nearest package.json above `from`: the repository's, or /app's in the image. */
function packageJson(from: string): Record<string, unknown> | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const path = join(dir, 'package.json');
    if (existsSync(path)) return readJson(path);
    if (dirname(dir) === dir) return undefined;
  }
}

export function versionInfo(
  read: { packageJson?: Record<string, unknown>; buildInfo?: Record<string, unknown>; node?: string } = {
    packageJson: packageJson(dirname(fileURLToPath(import.meta.url))),
    buildInfo: readJson(BUILD_INFO),
    node: process.version,
  },
): VersionInfo {
  const text = (v: unknown): string => (typeof v === 'string' && v !== '' ? v : 'unknown');
  return { version: text(read.packageJson?.version), commit: text(read.buildInfo?.commit), node: text(read.node) };
}

export const versionTable = (v: VersionInfo): string =>
  `${columns([
    ['VERSION', 'COMMIT', 'NODE'],
    [inertText(v.version), inertText(v.commit), inertText(v.node)],
  ])}\n`;

export function versionCommand(): Command {
  return new Command('version')
    .description('print the version of intake, the commit it was built from and the Node.js it runs on')
    .addOption(outputOption())
    .action((opts: Record<string, string | undefined>) => {
      const info = versionInfo();
      process.stdout.write(formatted(outputFormat(opts), info, () => versionTable(info)));
    });
}
