import { describeResult, evaluateObjective, type ClauseResult, type Objective } from '../options/objective.js';
import type { BenchResult } from './result.js';
import { figuresOf } from './sweep.js';

/** One `--threshold` judged on a run: the text given and each clause's result. */
export interface ThresholdResult {
  threshold: string;
  met: boolean;
  clauses: ClauseResult[];
}

/** Judges each --threshold on the 2xx latency and the error ratio of the run, as k6 does. */
export function judgeThresholds(thresholds: readonly Objective[], result: BenchResult): ThresholdResult[] {
  return thresholds.map((objective) => {
    const clauses = evaluateObjective(objective, figuresOf(result));
    return { threshold: objective.text, met: clauses.every((c) => c.met), clauses };
  });
}

/** The report's section: one line per threshold, ✓ or ✗ with the measured values. */
export function formatThresholds(results: readonly ThresholdResult[]): string {
  const width = Math.max(...results.map((r) => r.threshold.length));
  const lines = ['', 'Thresholds'];
  for (const r of results)
    lines.push(`  ${r.met ? '✓' : '✗'} ${r.threshold.padEnd(width)}  ${r.clauses.map(describeResult).join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** One line per failed threshold, for stderr and the exit status. */
export function failedThresholds(results: readonly ThresholdResult[]): string[] {
  return results
    .filter((r) => !r.met)
    .map(
      (r) =>
        `batchline bench: threshold ${r.threshold} failed: ${r.clauses
          .filter((c) => !c.met)
          .map(describeResult)
          .join(', ')}`,
    );
}
