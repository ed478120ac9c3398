import { Command, CommanderError } from 'commander';
import { makeBenchCommand } from './commands/bench.js';
import { makeServeCommand } from './commands/serve.js';
import { makeProfileCommand } from './commands/profile.js';
import { makeSimulateCommand } from './commands/simulate.js';
import { makeWatchCommand } from './commands/watch.js';
import { BatchlineError, ExitWithCode, missingRuntime } from './errors.js';
import { BATCHLINE_VERSION } from './version.js';

/** The `batchline` program with every command registered; nothing runs until it is parsed. */
export function buildProgram(): Command {
  const program = new Command('batchline')
    .description('Serve models with dynamic batching, load-test HTTP endpoints, and simulate batching configurations.')
    .version(BATCHLINE_VERSION)
    .showHelpAfterError('(run with --help for the options)')
    // A command's options are its own wherever they stand (`bench compare a b --html f` is compare's).
    .enablePositionalOptions();
  program.addCommand(makeServeCommand());
  program.addCommand(makeBenchCommand());
  program.addCommand(makeSimulateCommand());
  program.addCommand(makeProfileCommand());
  program.addCommand(makeWatchCommand());
  exitOverrideEverywhere(program);
  return program;
}

const USAGE_ERRORS = new Set([
  'commander.unknownOption',
  'commander.unknownCommand',
  'commander.excessArguments',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.invalidArgument',
]);

/** Maps an error to the process exit code, printing what the user needs to know. */
export function exitCodeFor(thrown: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  const error = missingRuntime(thrown) ?? thrown;
  if (error instanceof CommanderError) {
    // commander already printed it; a usage mistake exits 2, like an invalid option value
    return USAGE_ERRORS.has(error.code) ? 2 : error.exitCode;
  }
  if (error instanceof ExitWithCode) {
    if (error.message !== '') stderr.write(`${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof BatchlineError) {
    stderr.write(`batchline: ${error.message}\n`);
    return error.exitCode;
  }
  stderr.write(
    `batchline: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return 1;
}

/** Entry point of bin/batchline.js; the only place that calls process.exit (rule 6 of architecture.md). */
export async function main(argv: string[]): Promise<void> {
  // Output piped into `head` and the like: a closed pipe ends the command quietly.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  let code = 0;
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    code = exitCodeFor(error);
  }
  process.exit(code);
}

function exitOverrideEverywhere(command: Command): void {
  command.exitOverride();
  for (const sub of command.commands) exitOverrideEverywhere(sub);
}
