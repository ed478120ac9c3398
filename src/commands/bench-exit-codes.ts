import type { ErrorKind } from '../bench/error-kind.js';
import { counted } from '../bench/report-text.js';
import type { BenchResult } from '../bench/result.js';
import { windowText } from '../bench/stability-rule.js';
import { ExitWithCode } from '../errors.js';

/*
 * How a bench run ends when it did not pass: what it says and with which status (1: the run
 * measured nothing or never settled; 99: a threshold failed), after its figures were written.
 */

/**
 * k6's status when a threshold fails (its ThresholdsHaveFailed): a CI job tells "the server
 * missed the objective" from "the run could not measure" (1: nothing answered 2xx, the host does
 * not resolve) and from an invalid option (2), and a k6 user's scripts already test for 99.
 */
export const THRESHOLDS_FAILED_EXIT = 99;

/** A sweep none of whose steps got a 2xx answer measured nothing: exit 1, as a single run. */
export function refuseIfNothingSucceeded(results: readonly BenchResult[]): void {
  const failures = results.map(nothingSucceeded);
  if (failures.length > 0 && failures.every((f) => f !== undefined))
    throw new ExitWithCode(1, 'batchline bench: no request succeeded in any step');
}

/**
 * perf_analyzer's "Failed to obtain stable measurement": exit 1 (its own status, 2, is bench's
 * invalid option), after the figures were printed and written. A run the user stopped is not one.
 */
export function notSettled(results: readonly BenchResult[]): string | undefined {
  const failed = results.filter((r) => r.stability !== undefined && !r.stability.settled && !r.stability.stopped);
  if (failed.length === 0) return undefined;
  const s = failed[0]?.stability as NonNullable<BenchResult['stability']>;
  const what =
    results.length === 1
      ? 'the run'
      : `${failed.length} of ${results.length} steps (${failed.map((r) => (r.mode === 'open' ? `${r.targetRateRps} req/s` : counted(r.connections, 'connection'))).join(', ')})`;
  return `batchline bench: failed to obtain a stable measurement: ${what} did not settle within ${s.maxWindows} windows of ${windowText(s)} (--stable ${s.percentage}); try a longer --window or more --max-windows`;
}

export function refuseIfNotSettled(results: readonly BenchResult[]): void {
  const unsettled = notSettled(results);
  if (unsettled !== undefined) throw new ExitWithCode(1, unsettled);
}

/** Why a run proves nothing about the server: not one request got a 2xx answer. */
export function nothingSucceeded(result: BenchResult): string | undefined {
  if (result.requests.ok > 0 || (result.stoppedAtS !== undefined && result.stoppedAtS <= result.warmupS))
    return undefined;
  const errors = Object.entries(result.errors)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => {
      const cause = result.errorCauses[kind as ErrorKind];
      return cause === undefined ? `${kind} ${n}` : `${kind} ${n} (first: ${cause})`;
    });
  const statuses = Object.entries(result.status).map(([code, n]) => `${code}: ${n}`);
  const what = [
    ...(statuses.length > 0 ? [`answers ${statuses.join(', ')}`] : []),
    ...(errors.length > 0 ? [`errors ${errors.join(', ')}`] : []),
  ];
  return `batchline bench: no request succeeded (no 2xx answer among ${result.requests.sent} sent${what.length > 0 ? `; ${what.join('; ')}` : ''})`;
}
