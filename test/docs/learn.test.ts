/**
 * The guides (docs/learn.md, docs/scaling.md) name commands and files a learner will type and open: the
 * files must exist, and every `batchline` command must use a subcommand and flags it has.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';

const ROOT = join(import.meta.dirname, '..', '..');
const GUIDES = ['docs/learn.md', 'docs/scaling.md'];

/** The shell lines of a guide's bash blocks, continuation lines joined. */
function commandLines(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  return blocks.flatMap((block) => block.replace(/\\\n\s*/g, ' ').split('\n'));
}

/** Each `batchline …` invocation in a line, up to a pipe, `;`, `&`, redirection or comment. */
function invocations(line: string): string[][] {
  return [...line.matchAll(/(?:^|\s)batchline((?:\s+(?![|;&>#])\S+)*)/g)].map((m) =>
    (m[1] ?? '').trim().split(/\s+/).filter(Boolean),
  );
}

function flagsOf(command: Command): Set<string> {
  return new Set(command.options.flatMap((option) => [option.long, option.short].filter((f): f is string => !!f)));
}

describe.each(GUIDES)('%s', (guide) => {
  const text = readFileSync(join(ROOT, guide), 'utf8');

  it('names source files that exist', () => {
    const paths = [...text.matchAll(/`((?:src|test)\/[\w/.-]+\.tsx?)`/g)].map((m) => m[1] ?? '');
    if (guide === 'docs/learn.md') expect(paths.length).toBeGreaterThan(10);
    for (const path of paths) expect(existsSync(join(ROOT, path)), path).toBe(true);
  });

  it('runs batchline with subcommands and flags it has', () => {
    const program = buildProgram();
    const calls = commandLines(text).flatMap(invocations);
    expect(calls.length).toBeGreaterThan(3);
    for (const [name, ...args] of calls) {
      const command = program.commands.find((c) => c.name() === name);
      expect(command, `batchline ${name}`).toBeDefined();
      const sub = command!.commands.find((c) => c.name() === args[0]);
      const known = flagsOf(sub ?? command!);
      for (const flag of args.filter((arg) => /^--?[a-z]/.test(arg)).map((arg) => arg.split('=')[0]!)) {
        expect(known, `batchline ${name} ${flag}`).toContain(flag);
      }
    }
  });
});
