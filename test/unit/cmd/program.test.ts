/**
 * The command tree (cmd/program.ts) parses as the one-file CLI did: options after a subcommand
 * are the subcommand's own, and every command shows its help after an error. Actions are
 * replaced by ones that record what they were given, so nothing runs.
 */
import type { Command } from 'commander';
import { buildProgram } from '../../../cmd/program.js';

const find = (program: Command, path: string[]): Command =>
  path.reduce((c, name) => c.commands.find((s) => s.name() === name) as Command, program);

async function parsed(args: string[], path: string[]): Promise<Record<string, unknown>> {
  const program = buildProgram();
  // A parse error throws here rather than ending the test process.
  const throwing = (c: Command): void => {
    c.exitOverride().configureOutput({ writeErr: () => undefined });
    c.commands.forEach(throwing);
  };
  throwing(program);
  let seen: Record<string, unknown> | undefined;
  find(program, path).action((opts: Record<string, unknown>) => void (seen = opts));
  await program.parseAsync(args, { from: 'user' });
  if (!seen) throw new Error(`${path.join(' ')} did not run`);
  return seen;
}

describe('the intake command tree', () => {
  it('gives options after `operator cleanup` to cleanup, not to operator', async () => {
    const opts = await parsed(
      ['operator', 'cleanup', '--namespace', 'intake-system', '--log-level', 'warn'],
      ['operator', 'cleanup'],
    );
    expect(opts).toMatchObject({ namespace: 'intake-system', logLevel: 'warn', leaseName: 'intake-operator' });
  });

  it('reads -o on what lists or shows', async () => {
    expect(await parsed(['status', '-o', 'yaml'], ['status'])).toMatchObject({ output: 'yaml' });
    expect(
      await parsed(['deadletter', 'list', '-o', 'json', '--kind', 'mapping'], ['deadletter', 'list']),
    ).toMatchObject({
      output: 'json',
      kind: 'mapping',
    });
    expect(await parsed(['deadletter', 'replay', '--output', 'json'], ['deadletter', 'replay'])).toMatchObject({
      output: 'json',
    });
    expect(await parsed(['version', '-o', 'json'], ['version'])).toMatchObject({ output: 'json' });
  });

  it('has every command, each with its shared options', () => {
    const program = buildProgram();
    const names = (c: Command): string[] =>
      c.commands.flatMap((s) => [s.name(), ...names(s).map((n) => `${s.name()} ${n}`)]);
    expect(names(program)).toEqual(
      expect.arrayContaining([
        'ingester',
        'operator',
        'operator cleanup',
        'console',
        'deadletter list',
        'deadletter replay',
        'destination list',
        'destination get',
        'destination pause',
        'destination resume',
        'status',
        'version',
      ]),
    );
    for (const path of [['ingester'], ['operator'], ['operator', 'cleanup'], ['console']])
      expect(find(program, path).options.map((o) => o.long)).toEqual(
        expect.arrayContaining(['--log-level', '--kubeconfig']),
      );
    for (const path of [
      ['status'],
      ['deadletter', 'list'],
      ['deadletter', 'replay'],
      ['destination', 'list'],
      ['destination', 'pause'],
      ['destination', 'resume'],
      ['version'],
    ])
      expect(find(program, path).options.map((o) => o.long)).toContain('--output');
  });
});
