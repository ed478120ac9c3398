import { BENCH_OPTIONS } from '../../src/options/bench.js';
import { resolveOptions } from '../../src/options/schema.js';
import { validateBench } from '../../src/bench/plan-from-options.js';
import type { BenchPlan } from '../../src/bench/plan.js';
import type { ValidatedBench } from '../../src/bench/plan-from-options.js';

/** Options as the CLI would pass them (camelCase keys, string values), validated like `bench`. */
export function validated(
  url: string,
  raw: Record<string, string | boolean> = {},
  headers: string[] = [],
): ValidatedBench {
  const options = resolveOptions(BENCH_OPTIONS, raw, {});
  return validateBench(
    url,
    options,
    headers,
    { method: 'method' in raw, rate: 'rate' in raw, duration: 'duration' in raw },
    42,
  );
}

export function planFor(url: string, raw: Record<string, string | boolean> = {}): BenchPlan {
  return { ...validated(url, { quiet: true, ...raw }).plan };
}
