import { encodeHistogram } from '../../src/bench/histogram-codec.js';
import type { BenchResult } from '../../src/bench/result.js';
import { createLatencyHistogram, percentilesMs, recordMs } from '../../src/core/latency-histogram.js';

/**
 * A run (a window, a sweep step, a report to merge) whose every request was answered 200 with one
 * of `latenciesMs`, over one second of a closed loop of one connection; `more` changes the rest.
 */
export function resultOf(latenciesMs: readonly number[], more: Partial<BenchResult> = {}): BenchResult {
  const h = createLatencyHistogram();
  for (const ms of latenciesMs) recordMs(h, ms);
  const p = percentilesMs(h);
  const n = latenciesMs.length;
  const result: BenchResult = {
    mode: 'closed',
    url: 'http://x/',
    method: 'GET',
    seed: undefined,
    arrival: undefined,
    connections: 1,
    pipelining: 1,
    workers: 1,
    targetRateRps: undefined,
    plannedRateRps: undefined,
    stages: undefined,
    warmupS: 0,
    durationS: 1,
    drainS: 0,
    stoppedAtS: undefined,
    startedAt: '2026-01-01T00:00:00.000Z',
    requests: { sent: n, completed: n, ok: n, late: 0, errors: 0, dropped: 0 },
    status: { 200: n },
    errors: { timeout: 0, refused: 0, reset: 0, protocol: 0, other: 0 },
    errorCauses: {},
    sendRateRps: n,
    throughputRps: n,
    goodputRps: n,
    latency: p,
    latencyAll: p,
    service: p,
    sendLag: undefined,
    generator: { lateSendFraction: 0, eventLoop: { p99Ms: 0, maxMs: 0, meanMs: 0 } },
    trend: undefined,
    warnings: [],
    latencyHdr: encodeHistogram(h),
    latencyAllHdr: encodeHistogram(h),
    serviceHdr: encodeHistogram(h),
    sendLagHdr: undefined,
    ...more,
  };
  h.destroy();
  return result;
}
