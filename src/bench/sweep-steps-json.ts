import { toBenchJson } from './report-json.js';
import type { BenchResult } from './result.js';
import { stepVerdict, type Slo, type StepVerdict } from './sweep.js';

/** A sweep's steps in `--json`: each step's report and its verdict, as the table prints it. */
export function sweepStepsJson(
  results: readonly BenchResult[],
  slo: Slo,
): (ReturnType<typeof toBenchJson> & { verdict: StepVerdict })[] {
  return results.map((r) => ({ ...toBenchJson(r), verdict: stepVerdict(r, slo) }));
}
