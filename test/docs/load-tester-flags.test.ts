/**
 * The flags and commands issue 13 added are where a user looks first: in `--help` and in the
 * README (each command's full option table lives in its docs/ page, checked elsewhere).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';

const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

function help(name: string): string {
  const command = buildProgram().commands.find((c) => c.name() === name) as Command;
  let text = '';
  command.configureOutput({ writeOut: (s) => void (text += s) });
  command.outputHelp();
  return text;
}

describe('the new flags in --help', () => {
  it.each([
    [
      'bench',
      [
        '-c, --connections',
        '-d, --duration',
        '-R, --rate',
        '-n, --requests',
        '--threshold',
        'merge',
        '@inputs.jsonl',
        'localhost:8080/v1/infer',
        '1m30s',
      ],
    ],
    ['simulate', ['--model-latency-ms', '--cores', '--generator-cpu-ms', '--slo', 'p95', '1m30s']],
    ['profile', ['--body', '--serve-duration']],
  ] as const)('%s', (name, shown) => {
    const text = help(name);
    for (const flag of shown) expect(text).toContain(flag);
  });
});

describe('the new flags in the README', () => {
  it.each([
    '-c 64',
    '-d 30',
    '-R 600',
    '-n 1000',
    "--threshold 'p99<80ms'",
    'localhost:8080/v1/infer',
    'bench merge',
    '--body @inputs.jsonl',
    'simulate --rate 600 --model-latency-ms 20',
    '1m30s',
    'p95',
    'serving path',
    '--generator-cpu-ms',
    'bench:fidelity',
  ])('shows %s', (text) => {
    expect(README).toContain(text);
  });
});
