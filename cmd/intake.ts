#!/usr/bin/env -S node --max-semi-space-size=4
/**
 * The `intake` command: one entry point for every component (the commands: program.ts).
 *
 * Each command imports its component when it runs, not before (only types are imported statically):
 * @kubernetes/client-node alone adds about 55 MiB of resident memory, which a standalone ingester
 * (routes from a file) never needs, and `intake deadletter list` or `--help` load no component at
 * all (test/e2e/standalone-modules.test.ts checks both).
 * The shebang's V8 flag (a small young generation, see Dockerfile) is the one the image sets.
 */
import { ConfigError } from '../common/config-files.js';
import { buildProgram } from './program.js';

// `intake deadletter list | head`: a reader that closes the pipe early is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

buildProgram()
  .parseAsync(process.argv)
  .catch((err: Error) => {
    const known = err instanceof ConfigError || (err as { code?: string }).code === 'EADDRINUSE';
    process.stderr.write(`intake: ${known ? err.message : (err.stack ?? err.message)}\n`);
    process.exit(2);
  });
