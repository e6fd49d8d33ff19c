/**
 * The `intake` command tree, built without running it: cmd/intake.ts parses the command line with
 * it, and test/unit/docs-cli.test.ts checks every command and flag the docs show against it.
 * One module a command under commands/; the options they share in options.ts.
 */
import { Command } from 'commander';
import { consoleCommand } from './commands/console.js';
import { deadletterCommand } from './commands/deadletter.js';
import { destinationCommand } from './commands/destination.js';
import { ingesterCommand } from './commands/ingester.js';
import { inspectCommand } from './commands/inspect.js';
import { operatorCommand } from './commands/operator.js';
import { statusCommand } from './commands/status.js';
import { versionCommand } from './commands/version.js';

export function buildProgram(): Command {
  const program = new Command('intake')
    .description('Kubernetes-native ingestion of monitoring events and metric data points')
    .showHelpAfterError()
    // `intake operator cleanup --namespace NS`: options after a subcommand are the subcommand's own,
    // not its parent's (`operator` has a --namespace too).
    .enablePositionalOptions();
  for (const command of [
    ingesterCommand(),
    operatorCommand(),
    consoleCommand(),
    deadletterCommand(),
    destinationCommand(),
    inspectCommand(),
    statusCommand(),
    versionCommand(),
  ])
    program.addCommand(inheriting(command, program));
  return program;
}

/**
 * A command made apart (new Command) takes its parent's settings only when told, and so do its own
 * subcommands: without positional options `intake operator cleanup --namespace NS` would give
 * NS to operator, leaving cleanup without one.
 */
function inheriting(command: Command, parent: Command): Command {
  command.copyInheritedSettings(parent);
  for (const sub of command.commands) inheriting(sub, command);
  return command;
}
