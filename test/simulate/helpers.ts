import { resolveOptions } from '../../src/options/schema.js';
import { SIMULATE_OPTIONS, type SimulateOptions } from '../../src/options/simulate.js';
import { loadSimulationInputs, prepareRun, type PreparedRun } from '../../src/simulate/prepare.js';
import { buildReport, type SimulationReport } from '../../src/simulate/report.js';
import { runSimulation, type SimulationResult } from '../../src/simulate/run-simulation.js';
import type { ServingPathSetup } from '../../src/simulate/serving-path-model.js';

/** A worker serving path with nothing but what `overrides` gives: no costs, a core per thread, a batch of n in 1 + n ms. */
export function bareServingPath(overrides: Partial<ServingPathSetup> = {}): ServingPathSetup {
  return {
    execution: 'worker',
    admitMs: 0,
    answerMs: 0,
    batchWorkMs: (n) => 1 + n,
    batchDelayMs: () => 0,
    handoverWaitMs: () => 0,
    helpersMs: 0,
    generatorMs: 0,
    cores: Number.POSITIVE_INFINITY,
    ...overrides,
  };
}

/**
 * The latency profile file of a worker model whose batch of n takes 1 + 1·n ms (at `sizes`),
 * its run 0.1 ms of that and its hand-over the rest; `servingPath` adds or replaces the serving
 * path's measured steps (decode_ms, cores, serve_cpu …).
 */
export function workerModelProfile(servingPath: Record<string, unknown>, sizes: readonly number[] = [1, 2, 4, 8]) {
  const points = sizes.map((n) => ({
    batch_size: n,
    p50_ms: 1 + n,
    mean_ms: 1 + n,
    p90_ms: 1 + n,
    min_ms: 1 + n,
    max_ms: 1 + n,
    cv: 0,
  }));
  return {
    format: 'batchline-latency-profile/1',
    model: 'm',
    warmup: 1,
    repetitions: 1,
    points,
    fit: { a_ms: 1, b_ms: 1, r2: 1 },
    serving_path: {
      execution: 'worker',
      wire: 'json',
      body_bytes: 1000,
      run_points: points.map((p) => ({ batch_size: p.batch_size, p50_ms: p.p50_ms - 0.1 })),
      run_fit: { a_ms: 0.9, b_ms: 1 },
      handover_fit: { a_ms: 0.1, b_ms: 0 },
      ...servingPath,
    },
  };
}

/** Resolved simulate options from camelCase overrides, ignoring the environment. */
export function simulateOptions(overrides: Partial<Record<keyof SimulateOptions, unknown>> = {}): SimulateOptions {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) raw[key] = String(value);
  return resolveOptions(SIMULATE_OPTIONS, raw, {});
}

/** Runs a simulation from option overrides; `given` lists options treated as explicitly set. */
export function simulate(
  overrides: Partial<Record<keyof SimulateOptions, unknown>>,
  collect: { events?: boolean; trace?: boolean } = {},
): { prepared: PreparedRun; result: SimulationResult; report: SimulationReport } {
  const options = simulateOptions(overrides);
  const prepared = prepareRun(options, { given: Object.keys(overrides) }, collect);
  const result = runSimulation(prepared.setup);
  return { prepared, result, report: buildReport(result, prepared.context) };
}

/** The report of a simulation whose inputs are loaded as the command loads them (a --latency-profile file). */
export async function simulateWithInputs(overrides: Record<string, unknown>): Promise<SimulationReport> {
  const options = simulateOptions(overrides);
  const inputs = await loadSimulationInputs(options, new Set(Object.keys(overrides)));
  const { setup, context } = prepareRun(options, inputs);
  return buildReport(runSimulation(setup), context);
}
