import { percentilesMs } from '../core/latency-histogram.js';
import { ERROR_KINDS, type ErrorCounts } from './error-kind.js';
import { encodeHistogram, mergeEncoded } from './histogram-codec.js';
import type { BenchPlan } from './plan.js';
import { causesInOrder } from './build-result.js';
import type { BenchResult, ServerBreakdown } from './result.js';
import { worstEventLoop } from './self-monitor.js';

/**
 * One result of windows run one after another (`--stable`'s kept windows): histograms added
 * (percentiles read from the sum), counts summed, rates over the windows' summed length (not
 * summed, as `bench merge` sums runs made at the same time), the server's means weighted by its
 * inferences. `firstNumber` is the first window's 1-based number, for the warnings it keeps.
 */
export function joinWindows(plan: BenchPlan, windows: readonly BenchResult[], firstNumber: number): BenchResult {
  const first = windows[0];
  if (first === undefined) throw new Error('joinWindows: no window');
  const last = windows.at(-1) as BenchResult;
  const sum = (pick: (r: BenchResult) => number): number => windows.reduce((total, r) => total + pick(r), 0);
  const durationS = sum((r) => r.durationS);
  const rate = (pick: (r: BenchResult) => number): number =>
    durationS > 0 ? sum((r) => pick(r) * r.durationS) / durationS : 0;
  const sent = sum((r) => r.requests.sent);
  const bySent = (pick: (r: BenchResult) => number): number =>
    sent > 0 ? sum((r) => pick(r) * r.requests.sent) / sent : 0;
  const joined = (pick: (r: BenchResult) => string) => {
    const histogram = mergeEncoded(windows.map(pick));
    const figures = { percentiles: percentilesMs(histogram), encoded: encodeHistogram(histogram) };
    histogram.destroy();
    return figures;
  };
  const latency = joined((r) => r.latencyHdr);
  const latencyAll = joined((r) => r.latencyAllHdr);
  const service = joined((r) => r.serviceHdr);
  const sendLag = plan.mode === 'open' ? joined((r) => r.sendLagHdr ?? '') : undefined;
  const status: Record<string, number> = {};
  for (const r of windows) for (const [code, n] of Object.entries(r.status)) status[code] = (status[code] ?? 0) + n;
  const errors = Object.fromEntries(ERROR_KINDS.map((k) => [k, sum((r) => r.errors[k])])) as ErrorCounts;
  const cpu = windows.map((r) => r.generator.cpuMsPerRequest);
  const trends = windows.map((r) => r.trend);
  // Each window drains before the next starts: the worst one's trend says whether the load was held.
  const trend = trends.every((t) => t !== undefined) ? (trends.find((t) => !t.sustained) ?? trends.at(-1)) : undefined;
  const stoppedIn = windows.find((r) => r.stoppedAtS !== undefined);

  return {
    ...first,
    warmupS: plan.warmupMs / 1000,
    durationS,
    drainS: last.drainS,
    stoppedAtS: stoppedIn === undefined ? undefined : plan.warmupMs / 1000 + durationS,
    requests: {
      sent,
      completed: sum((r) => r.requests.completed),
      ok: sum((r) => r.requests.ok),
      late: sum((r) => r.requests.late),
      errors: sum((r) => r.requests.errors),
      dropped: sum((r) => r.requests.dropped),
    },
    status,
    errors,
    errorCauses: causesInOrder(Object.assign({}, ...windows.map((r) => r.errorCauses).reverse())),
    sendRateRps: rate((r) => r.sendRateRps),
    throughputRps: rate((r) => r.throughputRps),
    goodputRps: rate((r) => r.goodputRps),
    latency: latency.percentiles,
    latencyAll: latencyAll.percentiles,
    service: service.percentiles,
    sendLag: sendLag?.percentiles,
    generator: {
      lateSendFraction: bySent((r) => r.generator.lateSendFraction),
      eventLoop: worstEventLoop(windows.map((r) => r.generator.eventLoop)),
      ...(cpu.every((c) => c !== undefined)
        ? { cpuMsPerRequest: bySent((r) => r.generator.cpuMsPerRequest ?? 0) }
        : {}),
    },
    trend,
    warnings: windows.flatMap((r, i) => r.warnings.map((w) => `window ${firstNumber + i}: ${w}`)),
    latencyHdr: latency.encoded,
    latencyAllHdr: latencyAll.encoded,
    serviceHdr: service.encoded,
    sendLagHdr: sendLag?.encoded,
    server: joinServer(windows.map((r) => r.server)),
  };
}

/** The server's figures over every window, or undefined when a window has none. */
function joinServer(parts: readonly (ServerBreakdown | undefined)[]): ServerBreakdown | undefined {
  if (parts.length === 0 || parts.some((p) => p === undefined)) return undefined;
  const all = parts as ServerBreakdown[];
  const first = all[0] as ServerBreakdown;
  const inferences = all.reduce((n, p) => n + p.inferences, 0);
  const mean = (pick: (m: ServerBreakdown['meanMs']) => number): number =>
    inferences > 0 ? all.reduce((total, p) => total + pick(p.meanMs) * p.inferences, 0) / inferences : 0;
  return {
    model: first.model,
    version: first.version,
    source: first.source,
    windowS: all.reduce((s, p) => s + p.windowS, 0),
    inferences,
    executions: all.reduce((n, p) => n + p.executions, 0),
    failed: all.reduce((n, p) => n + p.failed, 0),
    meanMs: {
      request: mean((m) => m.request),
      queue: mean((m) => m.queue),
      computeInput: mean((m) => m.computeInput),
      computeInfer: mean((m) => m.computeInfer),
      computeOutput: mean((m) => m.computeOutput),
    },
  };
}
