/**
 * The README and the guides a user reads (simulate, scaling, reports and architecture too) are a
 * manual, not a lab notebook: no dates and no "today" (figures are reproduced with a command,
 * their history is in docs/lab/), and every
 * `batchline CMD --flag` they name in running text is a flag CMD has (the shell blocks are run by
 * the doc-runner tests; this catches the prose around them).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';

const ROOT = join(import.meta.dirname, '..', '..');
const MANUAL = [
  'README.md',
  'docs/learn.md',
  'docs/library.md',
  'docs/models.md',
  'docs/api.md',
  'docs/protocols.md',
  'docs/deploy.md',
  'docs/bench.md',
  'docs/simulate.md',
  'docs/scaling.md',
  'docs/reports.md',
  'docs/architecture.md',
];
const COMMANDS = /^(?:npx )?(?:batchline )?(serve|bench|simulate|profile|watch)(?: (compare|merge))?\s+(.*)$/;

/** Each line of a markdown file with its 1-based number, link targets removed (a lab note's name holds its date). */
function linesOf(file: string): [number, string][] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return text.split('\n').map((line, i) => [i + 1, line.replace(/\]\([^)]*\)/g, '](…)')]);
}

function flagsOf(command: Command): Set<string> {
  const flags = new Set(['--help', '-h']);
  for (const option of command.options) {
    if (option.long) flags.add(option.long);
    if (option.short) flags.add(option.short);
    if (option.long?.startsWith('--no-')) flags.add(`--${option.long.slice('--no-'.length)}`);
  }
  return flags;
}

describe.each(MANUAL)('%s', (file) => {
  it('carries no dates and no "today"', () => {
    const dated = linesOf(file)
      .filter(([, line]) => /\b20\d\d-\d\d-\d\d\b|\btoday\b/i.test(line))
      .map(([n, line]) => `${file}:${n}: ${line.trim()}`);
    expect(dated).toEqual([]);
  });

  it('names, in code spans, only flags the command has', () => {
    const program = buildProgram();
    const wrong: string[] = [];
    for (const [n, line] of linesOf(file)) {
      for (const span of line.matchAll(/`([^`]+)`/g)) {
        const match = COMMANDS.exec(span[1] ?? '');
        if (match === null) continue;
        const command = program.commands.find((c) => c.name() === match[1])!;
        const sub = match[2] === undefined ? command : command.commands.find((c) => c.name() === match[2])!;
        const known = flagsOf(sub);
        for (const flag of (match[3] ?? '').matchAll(/(?<![\w-])(--?[a-zA-Z][\w-]*)/g)) {
          if (!known.has(flag[1] ?? '')) wrong.push(`${file}:${n}: ${span[1]} (no ${flag[1]})`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
