import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BENCH_OPTIONS } from '../../src/options/bench.js';

describe('docs/bench.md', () => {
  const docs = readFileSync(new URL('../../docs/bench.md', import.meta.url), 'utf8');

  it('documents every option of the schema', () => {
    for (const spec of Object.values(BENCH_OPTIONS)) {
      // As the table writes it: `-c, --connections`, `--no-ui` for an option on by default.
      const negated = spec.kind === 'boolean' && 'negatable' in spec ? 'no-' : '';
      const short = 'short' in spec ? `-${spec.short}, ` : '';
      expect(docs).toContain(`\`${short}--${negated}${spec.flag}`);
    }
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
