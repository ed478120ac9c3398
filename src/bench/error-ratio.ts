import type { BenchResult } from './result.js';

/**
 * Measured sends that got no 2xx answer (non-2xx, failed, refused by --max-in-flight), whenever
 * it came, as a fraction of the sends: what `errors` in an objective bounds, k6's
 * `http_req_failed` rate. A step's capacity is judged by its trend, not by this.
 */
export function errorRatioOf(result: BenchResult): number {
  const offered = result.requests.sent + result.requests.dropped;
  return offered === 0 ? 1 : (offered - result.requests.ok) / offered;
}
