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

/**
 * How a sweep ended, for a script that must tell a sweep cut short from one whose every step
 * ran (fewer `steps` alone do not say why): `all_steps`, `stop_on_miss` (ended after the first
 * step that did not meet --slo, the last of `steps`), or `stopped` (Ctrl-C, SIGTERM).
 */
export type SweepEnd = 'all_steps' | 'stop_on_miss' | 'stopped';

/** The fields both sweep schemas carry about their end: how, and of how many steps asked for. */
export function sweepEndJson(end: SweepEnd, stepsPlanned: number): { ended: SweepEnd; steps_planned: number } {
  return { ended: end, steps_planned: stepsPlanned };
}
