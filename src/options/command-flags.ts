import type { Command } from 'commander';
import { fmtLimit, type OptionSchema, type OptionSpec } from './schema.js';

/**
 * Registers every option of `schema` on `command`, with env and default in the help text. Kept
 * apart from schema.ts, which the browser's report pages bundle (the rerun form resolves a
 * simulation's options there): a page has no commander and no use for help text.
 */
export function addOptions(command: Command, schema: OptionSchema): Command {
  for (const spec of Object.values(schema)) {
    const long =
      spec.kind === 'boolean'
        ? `--${spec.negatable === true ? 'no-' : ''}${spec.flag}`
        : `--${spec.flag} <${placeholder(spec)}>`;
    const flags = spec.short === undefined ? long : `-${spec.short}, ${long}`;
    // `--no-x` alone makes commander default x to true, which would hide its env variable (a flag
    // wins over env); with `--x` declared first (hidden: it only restates the default) x stays
    // undefined unless given, so resolveOptions falls back to env, then the default.
    if (spec.kind === 'boolean' && spec.negatable === true)
      command.addOption(command.createOption(`--${spec.flag}`).hideHelp());
    if (spec.kind === 'list') command.option(flags, helpText(spec), collect);
    else command.option(flags, helpText(spec));
  }
  return command;
}

function placeholder(spec: OptionSpec): string {
  switch (spec.kind) {
    case 'int':
    case 'number':
      return 'n';
    case 'duration':
      return 'duration';
    case 'affine':
      return 'ms|a+bn';
    case 'enum':
      return spec.choices.join('|');
    case 'json':
    case 'list':
      return spec.placeholder;
    default:
      return 'value';
  }
}

/** Commander's accumulator of a list option: every value given, in order. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function helpText(spec: OptionSpec): string {
  const offFlag = spec.kind === 'boolean' && spec.negatable === true && spec.describesOn === true;
  // --help lists --no-<flag> alone: its line must say that it turns off what the description does.
  const parts = [offFlag ? `turns off what is on by default: ${spec.description}` : spec.description];
  if (spec.kind === 'int' || spec.kind === 'number')
    parts.push(`range ${spec.min}..${spec.max}${spec.metricSuffix === true ? ', 2k = 2000' : ''}`);
  // An empty string default (--allowed-hosts: none besides loopback) is no default to state.
  if (spec.default !== undefined && spec.default !== '' && spec.kind !== 'boolean' && spec.kind !== 'list')
    parts.push(`default ${spec.kind === 'duration' ? fmtLimit(spec.default) : String(spec.default)}`);
  if (spec.kind === 'duration') parts.push(spec.bareUnit === 'ms' ? 'a bare number is ms' : 'a bare number is seconds');
  if (spec.env !== undefined) parts.push(`env ${spec.env}`);
  return parts.length > 1 ? `${parts[0]} (${parts.slice(1).join(', ')})` : parts[0]!;
}
