import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';
import { analyzeSweep, formatSweep } from '../../src/simulate/sweep-report.js';

/** The whole --help of a command as a user sees it, the examples after the options included. */
function fullHelp(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (s) => void (text += s), writeErr: (s) => void (text += s) });
  command.outputHelp();
  return text;
}

function everyCommand(command: Command): Command[] {
  return [command, ...command.commands.flatMap(everyCommand)];
}

/**
 * Values a shell would take apart: `p99<50ms` unquoted is a redirection from a file `50ms`,
 * `a|b` a pipe, `a&b` a background job, `a;b` two commands.
 */
function unquotedShellValues(text: string): string[] {
  const found: string[] = [];
  for (const line of text.split('\n')) {
    // Only what is meant to be typed: example lines, and `--flag value` in prose.
    for (const match of line.matchAll(/--[a-z][a-z0-9-]*[ =]((?:'[^']*'|"[^"]*"|[^\s'",()])+)/g)) {
      // Placeholders (<duration>, <GET|POST>) are not typed as they stand; prose may end in ; or ,.
      if ((match[1] as string).startsWith('<')) continue;
      const value = (match[1] as string).replace(/'[^']*'|"[^"]*"/g, '').replace(/[;,.]+$/, '');
      if (/[<>|&;]/.test(value)) found.push(`${match[0]}  (in: ${line.trim()})`);
    }
  }
  return found;
}

describe('help examples paste into a shell', () => {
  it('finds an unquoted objective (the check can fail)', () => {
    expect(unquotedShellValues('  batchline simulate --slo p99<50ms')).toHaveLength(1);
    expect(unquotedShellValues("  batchline simulate --slo 'p99<50ms' --threshold 'errors<1%'")).toEqual([]);
    expect(unquotedShellValues('  --interval <duration>  --method <GET|POST>  and --threshold use; more')).toEqual([]);
    expect(unquotedShellValues('  bench --threshold errors<1% <url>')).toHaveLength(1);
  });

  it.each(everyCommand(buildProgram()).map((c) => [c.name(), c] as const))(
    'quotes every value with < > | & ; in `%s --help`',
    (_name, command) => {
      const help = fullHelp(command);
      expect(help.length).toBeGreaterThan(0);
      expect(unquotedShellValues(help)).toEqual([]);
    },
  );

  it('quotes the objective simulate --sweep suggests when none was given', () => {
    const text = formatSweep(analyzeSweep(1, [], [], undefined));
    expect(text).toContain("--slo 'p99<50ms'");
    expect(unquotedShellValues(text)).toEqual([]);
  });
});

describe('--help states each default', () => {
  it.each(everyCommand(buildProgram()).map((c) => [c.name(), c] as const))(
    'never shows an empty default in `%s --help`',
    (_name, command) => {
      // `(default , env ALLOWED_HOSTS)` reads as a missing word: an option with no value by default says nothing.
      expect(fullHelp(command)).not.toMatch(/[(,] ?default\s*[,)]/);
    },
  );
});
