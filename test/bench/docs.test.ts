import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BENCH_OPTIONS } from '../../src/options/bench.js';

describe('docs/bench.md', () => {
  const docs = readFileSync(new URL('../../docs/bench.md', import.meta.url), 'utf8');

  it('documents every option of the schema', () => {
    for (const spec of Object.values(BENCH_OPTIONS)) expect(docs).toContain(`\`--${spec.flag}`);
  });

  it('documents every field of the --json report', () => {
    for (const field of ['mode', 'target_rate_rps', 'duration_s', 'requests.sent', 'status', 'errors', 'throughput_rps', 'goodput_rps', 'latency_ms', 'service_ms', 'send_lag_ms', 'seed']) {
      expect(docs).toContain(`\`${field}`);
    }
  });
});
