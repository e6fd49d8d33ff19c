/**
 * Run by `npm run build` after tsc (`node cmd/write-build-info.ts`): stamps the commit the build
 * is made from into dist/cmd/build-info.json, which `intake version` prints. INTAKE_COMMIT names
 * it where the checkout has no git (the Dockerfile's build argument); neither: "unknown".
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function commit(): string {
  const given = process.env.INTAKE_COMMIT?.trim();
  if (given) return given;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

const out = join(root, 'dist', 'cmd', 'build-info.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ commit: commit() })}\n`);
