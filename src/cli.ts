import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { makeBenchCommand } from './commands/bench.js';
import { namesOtherToolsFlag, otherToolsFlagHint } from './commands/bench-other-tools.js';
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

const HELP_AFTER_ERROR = '(run with --help for the options)';

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
  const error = missingRuntime(thrown, BATCHLINE_VERSION) ?? thrown;
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

/** Entry point of bin/batchline.js; the one place that ends the process with a command's status (rule 6 of architecture.md). */
export async function main(argv: string[]): Promise<void> {
  // Output piped into `head` and the like: a closed pipe ends the command quietly.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  let code = 0;
  const program = buildProgram();
  if (namesOtherToolsFlag(argv))
    program.commands.find((command) => command.name() === 'bench')?.showSuggestionAfterError(false);
  const flagAsValue = optionGivenAFlag(program, argv);
  try {
    if (flagAsValue !== undefined) {
      process.stderr.write(`${flagAsValue}\n${HELP_AFTER_ERROR}\n`);
      code = 2;
    } else await program.parseAsync(argv);
  } catch (error) {
    code = exitCodeFor(error);
    const hint = switchGivenAValue(program, argv, error) ?? otherToolsFlagHint(argv, error);
    if (hint !== undefined) process.stderr.write(`${hint}\n`);
  }
  process.exit(code);
}

const BOOLEAN_WORD = /^(true|false|yes|no|on|off|0|1)$/i;

/**
 * `--pipeline false` (the option tables allow true/false, which the environment takes): commander
 * reads the word as an excess argument and says only "too many arguments", and `--pipeline=false`
 * is an unknown option (`--pipeline maybe` too). This names the switch and how to write it. Undefined for other mistakes.
 */
export function switchGivenAValue(program: Command, argv: readonly string[], error: unknown): string | undefined {
  if (!(error instanceof CommanderError)) return undefined;
  if (error.code !== 'commander.excessArguments' && error.code !== 'commander.unknownOption') return undefined;
  const args = argv.slice(2);
  const { command, first } = commandOf(program, args);
  for (let i = first; i < args.length; i++) {
    const [flag = '', joined] = (args[i] as string).split(/=(.*)/s);
    const word = joined ?? args[i + 1];
    const option = command.options.find((candidate) => candidate.long === flag || candidate.short === flag);
    if (option === undefined || option.required || option.optional || word === undefined) continue;
    // Any word is the switch's when written `--switch=word`, or when commander found a word too
    // many for a command that takes none (serve: `--pipeline maybe`); otherwise only a yes/no
    // word, as the word after a switch may be the command's own argument (bench's URL), and
    // an unknown option later on is a mistake of its own (`--pipeline 8080 --frob`).
    const itsValue =
      joined !== undefined ||
      BOOLEAN_WORD.test(word) ||
      (error.code === 'commander.excessArguments' && command.registeredArguments.length === 0 && !word.startsWith('-'));
    if (!itsValue) continue;
    const name = option.attributeName();
    const negation = command.options.find((candidate) => candidate.negate && candidate.attributeName() === name);
    const positive = command.options.find((candidate) => !candidate.negate && candidate.attributeName() === name);
    const ways =
      negation === undefined || positive === undefined
        ? `write ${flag} alone to turn it on`
        : `write ${positive.long} to turn it on or ${negation.long} to turn it off`;
    return `batchline: invalid option ${flag}: it takes no value (got '${word}'); ${ways}`;
  }
  return undefined;
}

/** The command an argv names (`bench compare` …), and where its own words start. */
function commandOf(program: Command, args: readonly string[]): { command: Command; first: number } {
  let command = program;
  let first = 0;
  for (; first < args.length; first++) {
    const sub = command.commands.find((candidate) => candidate.name() === args[first]);
    if (sub === undefined) break;
    command = sub;
  }
  return { command, first };
}

/**
 * `serve --model $MODEL --max-batch-size 16` with MODEL unset (a variable set in another
 * terminal): commander takes the next flag as the option's value, and the mistake surfaced as
 * "too many arguments" (the 16), as an invalid --model-name derived from '--no-ui', or not at all
 * (bench sent the body '--quiet'). An option that needs a value and is followed by one of the
 * command's own flags is named instead. Undefined when there is none.
 */
export function optionGivenAFlag(program: Command, argv: readonly string[]): string | undefined {
  const args = argv.slice(2);
  const { command, first } = commandOf(program, args);
  const isFlag = (word: string) => {
    const name = word.split('=')[0];
    return name === '--help' || name === '-h' || command.options.some((o) => o.long === name || o.short === name);
  };
  for (let i = first; i < args.length - 1; i++) {
    const word = args[i] as string;
    if (word === '--') return undefined;
    const option = command.options.find((candidate) => candidate.long === word || candidate.short === word);
    if (option === undefined || !option.required) continue;
    const next = args[i + 1] as string;
    if (isFlag(next)) {
      return `batchline: invalid option ${word}: it needs a value, and the word after it is the option ${next.split('=')[0]} (an empty shell variable, such as $MODEL set in another terminal, leaves it without one); write ${word}=${next} if that is the value`;
    }
    i++;
  }
  return undefined;
}

/** Every command throws instead of exiting, and points to its --help after a usage mistake (addCommand does not pass it down). */
function exitOverrideEverywhere(command: Command): void {
  command.exitOverride().showHelpAfterError(HELP_AFTER_ERROR);
  for (const sub of command.commands) exitOverrideEverywhere(sub);
}

/** Whether this module is the program node was given (`node dist/src/cli.js …`), not an import. */
export function isEntryPoint(moduleUrl: string, argv1: string | undefined): boolean {
  if (argv1 === undefined) return false;
  try {
    return realpathSync(argv1) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

// `node dist/src/cli.js serve`, as a TypeScript project's build is often run, runs the command
// with bin/batchline.js's start-up (see there) instead of loading the commands and exiting 0
// having done nothing.
if (isEntryPoint(import.meta.url, process.argv[1])) {
  process.on('SIGUSR1', () => {});
  void main(process.argv);
}
