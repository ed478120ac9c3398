import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellWord } from '../../../src/report/html/command-line.js';

/** What bash makes of `printf '%s\0' WORD`: the argument the pasted command would pass. */
function bashReads(quoted: string): string {
  const out = execFileSync('bash', ['-c', `printf '%s\\0' ${quoted}`], { encoding: 'utf8' });
  expect(out.endsWith('\0')).toBe(true);
  return out.slice(0, -1);
}

const HOSTILE = [
  'plain',
  '',
  'two words',
  "it's",
  '"double"',
  '$(touch /tmp/batchline-pwned)',
  '`id`',
  '${HOME}',
  'a\\b',
  '*.json',
  '~/x',
  '{a,b}',
  '!!',
  'a;b|c&d',
  'line1\nline2',
  'tab\there',
  'cr\rhere',
  'bell\x07 del\x7f esc\x1b[31m',
  "quote ' and newline\n and $(x)",
  'sep\u2028\u2029',
  'é ü 日本',
];

describe('shellWord: a word of the command line a page shows for copy and paste', () => {
  it.each(HOSTILE.map((w) => [JSON.stringify(w), w]))('bash reads %s back as it was', (_name, word) => {
    expect(bashReads(shellWord(word))).toBe(word);
  });

  it('stays on one line: a page renders a newline as a space, and that space is what gets copied', () => {
    for (const word of HOSTILE) expect(shellWord(word)).not.toMatch(/[\x00-\x1f\x7f]/);
  });

  it('leaves plain words alone', () => {
    expect(shellWord('--rate')).toBe('--rate');
    expect(shellWord('http://127.0.0.1:8080/v1/infer')).toBe('http://127.0.0.1:8080/v1/infer');
  });
});
