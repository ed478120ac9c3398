import { BatchlineError } from '../errors.js';
import type { CountAndMs, InferenceTotals } from './inference-statistics.js';
import type { ModelVersion } from './model-version.js';
import type { Registry } from './registry.js';
import { type ModelRef, type Targets, unavailable } from './target.js';

/** `$duration_stat` / `StatisticDuration`: a count and its total time in ns. */
export interface DurationStat {
  count: number;
  ns: number;
}

/** `$model_stat` / `ModelStatistics`, with its fields in the order Triton's server writes them. */
export interface ModelStat {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: Record<
    'success' | 'fail' | 'queue' | 'compute_input' | 'compute_infer' | 'compute_output' | 'cache_hit' | 'cache_miss',
    DurationStat
  >;
  /** Per response of a decoupled model, which batchline does not serve: always empty. */
  response_stats: Record<string, never>;
  batch_stats: {
    batch_size: number;
    compute_input: DurationStat;
    compute_infer: DurationStat;
    compute_output: DurationStat;
  }[];
  /**
   * The device memory its load took, by kind: empty, as Triton's own is on a CPU-only server (it
   * fills it only from CUDA's allocation tracking, CUPTI; host allocations are not seen).
   */
  memory_usage: never[];
}

const NONE: DurationStat = { count: 0, ns: 0 };

function duration(count: number, ms: number): DurationStat {
  return { count, ns: Math.round(ms * 1e6) };
}

/**
 * One version's statistics as Triton's statistics extension reports them. batchline times a
 * batch's run whole (its inputs handed to the instance, the run, its outputs taken back), so
 * `compute_infer` holds that time and `compute_input` and `compute_output` hold 0 ns, with the
 * counts Triton gives them; there is no response cache (`cache_hit`, `cache_miss`: 0).
 */
export function modelStat(version: ModelVersion, totals: InferenceTotals): ModelStat {
  const { success, fail } = totals;
  const zeroNs = (count: number): DurationStat => ({ count, ns: 0 });
  return {
    name: version.name,
    version: String(version.version),
    last_inference: totals.lastExecutionEpochMs,
    inference_count: success.count,
    execution_count: totals.executions,
    inference_stats: {
      success: fromTotal(success),
      fail: fromTotal(fail),
      queue: duration(success.count, totals.queueMs),
      compute_input: zeroNs(success.count),
      compute_infer: duration(success.count, totals.computeMs),
      compute_output: zeroNs(success.count),
      cache_hit: NONE,
      cache_miss: NONE,
    },
    response_stats: {},
    batch_stats: totals.runsBySize.map((runs) => ({
      batch_size: runs.size,
      compute_input: zeroNs(runs.count),
      compute_infer: duration(runs.count, runs.ms),
      compute_output: zeroNs(runs.count),
    })),
    memory_usage: [],
  };
}

function fromTotal(total: CountAndMs): DurationStat {
  return duration(total.count, total.ms);
}

/** A version Triton would list: one that is ready (not loading, draining or failed); it has statistics then. */
function listed(version: ModelVersion): boolean {
  return version.state === 'ready' && version.statistics !== undefined;
}

/**
 * `{ model_stats }` for every version of every model (`ref` undefined), every version of one model
 * (`ref` without a version) or one version, in name then version order. As Triton's server, only
 * ready versions are listed (a version that drains, on its way out, is not; one whose instances
 * are restarting is). An unknown model or version is refused as the other `/v2` routes refuse it
 * (404 model_not_found, 400 for a version that is not a number; Triton says 400 to both); a
 * model none of whose versions is ready, or a version that is not, 503 model_unavailable.
 */
export function modelStatistics(
  runtime: { readonly registry: Registry; readonly targets: Targets },
  ref: (ModelRef & { readonly name: string }) | undefined,
): { model_stats: ModelStat[] } | BatchlineError {
  const { registry, targets } = runtime;
  let versions: readonly ModelVersion[];
  if (ref === undefined) versions = registry.all().filter(listed);
  else if (ref.version === undefined || ref.version === '') {
    const all = registry.versionsOf(ref.name);
    if (all.length === 0) {
      const notFound = targets.find(ref);
      if (notFound instanceof BatchlineError) return notFound;
    }
    versions = all.filter(listed);
    if (versions.length === 0 && all.length > 0) return unavailable(all[0]!);
  } else {
    const found = targets.find(ref);
    if (found instanceof BatchlineError) return found;
    if (!listed(found)) return unavailable(found);
    versions = [found];
  }
  const ordered = [...versions].sort((a, b) => (a.name === b.name ? a.version - b.version : a.name < b.name ? -1 : 1));
  return { model_stats: ordered.map((v) => modelStat(v, v.statistics!.totals())) };
}
