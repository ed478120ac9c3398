import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LATENCY_COLUMNS } from '../../src/bench/report-text.js';
import { buildProgram } from '../../src/cli.js';

describe('docs/bench.md', () => {
  const docs = readFileSync(new URL('../../docs/bench.md', import.meta.url), 'utf8');

  it('lists in its options table every option of `bench --help`, and no other', () => {
    const table = docs.slice(docs.indexOf('## Options'), docs.indexOf('An invalid value exits'));
    const documented = table
      .split('\n')
      .filter((line) => line.startsWith('| `-'))
      .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/(?<![\w-])(--?[a-zA-Z][\w-]*)/g)].map((m) => m[1]));
    const bench = buildProgram().commands.find((c) => c.name() === 'bench')!;
    const help = bench.options
      .filter((o) => !o.hidden)
      .flatMap((o) => [o.short, o.long])
      .filter((flag) => flag !== undefined);
    expect(documented.sort()).toEqual(help.sort());
  });

  it("`bench --help`'s summary names every scheme bench loads and every latency column it prints", () => {
    const bench = buildProgram().commands.find((c) => c.name() === 'bench')!;
    const summary = bench.description();
    for (const scheme of ['http://', 'https://', 'grpc://']) expect(summary).toContain(scheme);
    expect(summary).not.toMatch(/an HTTP endpoint\./);
    const listed = summary.match(/(p50\/[\w./]+) latency/)?.[1]?.split('/');
    expect(listed).toEqual([...LATENCY_COLUMNS]);
  });

  it('shows bench merge on two bench processes that ran at the same time, and what it printed', () => {
    const section = docs.slice(docs.indexOf('## `bench merge`'), docs.indexOf('## `--hdr-log`'));
    expect(section.match(/^batchline bench -R .* --json [ab]\.json .* &$/gm)).toHaveLength(2);
    expect(section).toContain('batchline bench merge a.json b.json');
    expect(section).toMatch(/merged 2 runs: a\.json, b\.json\n/);
  });

  it('documents every field of the --json report', () => {
    for (const field of [
      'mode',
      'target_rate_rps',
      'duration_s',
      'requests.sent',
      'status',
      'errors',
      'throughput_rps',
      'goodput_rps',
      'latency_ms',
      'service_ms',
      'send_lag_ms',
      'seed',
    ]) {
      expect(docs).toContain(`\`${field}`);
    }
  });
});
