/**
 * `intake version` (cmd/commands/version.ts): version from package.json, the commit stamped at
 * build time or "unknown", Node's version; and the built command's three formats.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { versionInfo, versionTable } from '../../../cmd/commands/version.js';
import { ROOT } from '../../support/paths.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('versionInfo', () => {
  it('reads the version, the commit and Node', () => {
    expect(
      versionInfo({ packageJson: { version: '1.2.3' }, buildInfo: { commit: 'abc123' }, node: 'v24.1.0' }),
    ).toEqual({
      version: '1.2.3',
      commit: 'abc123',
      node: 'v24.1.0',
    });
  });

  it('says unknown for what it could not read', () => {
    expect(versionInfo({ packageJson: undefined, buildInfo: undefined, node: '' })).toEqual({
      version: 'unknown',
      commit: 'unknown',
      node: 'unknown',
    });
    expect(versionInfo({ packageJson: { version: 7 }, buildInfo: { commit: '' }, node: 'v24.1.0' }).commit).toBe(
      'unknown',
    );
  });

  it("finds this repository's package.json from the source", () => {
    expect(versionInfo().version).toBe(PACKAGE_VERSION);
    expect(versionInfo().node).toBe(process.version);
  });

  it('prints a table, inert', () => {
    expect(versionTable({ version: '1.2.3', commit: 'abc\u001b[2J', node: 'v24.1.0' })).toBe(
      'VERSION  COMMIT      NODE\n1.2.3    abc\\x1b[2J  v24.1.0\n',
    );
  });
});

describe('the built intake version', () => {
  const intake = (...args: string[]) =>
    execFileSync(process.execPath, [join(ROOT, 'dist/cmd/intake.js'), 'version', ...args], { encoding: 'utf8' });

  it('prints the version, the commit it was built from and Node, as a table, JSON or YAML', () => {
    const json = JSON.parse(intake('-o', 'json')) as Record<string, string>;
    expect(json).toEqual({
      version: PACKAGE_VERSION,
      commit: expect.stringMatching(/^([0-9a-f]{40}|unknown)$/),
      node: process.version,
    });
    // A checkout with git: the build stamped a commit.
    expect(json.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(parse(intake('-o', 'yaml'))).toEqual(json);
    expect(intake()).toBe(versionTable(json as never));
  });
});
