import { createLatencyHistogram, percentilesMs } from '../../core/latency-histogram.js';
import { addEncoded } from '../../bench/histogram-codec.js';
import { LOG_INTERVAL_MS, type EncodedInterval } from '../../bench/recorder.js';
import type { ServerSample } from '../../bench/server-samples.js';

/** One second of a bench run, from the HdrHistogram log's interval (all threads added). */
export interface BenchSecond {
  /** Seconds from the run's start (warm-up included) to the start of this one. */
  startS: number;
  answered: number;
  ok: number;
  errors: number;
  /** Latency of every answer in the second, ms; null when nothing was answered. */
  p50: number | null;
  p99: number | null;
  max: number | null;
}

/**
 * The run second by second, from the same per-second histograms `--hdr-log` writes: each
 * second's histograms of every thread are added (never their percentiles averaged), read, and
 * dropped before the next, so an hour-long run needs one histogram at a time.
 */
export function benchSeconds(threads: readonly (readonly EncodedInterval[])[]): BenchSecond[] {
  const byIndex = new Map<number, EncodedInterval[]>();
  for (const intervals of threads)
    for (const interval of intervals) byIndex.set(interval.index, [...(byIndex.get(interval.index) ?? []), interval]);
  const indexes = [...byIndex.keys()].sort((a, b) => a - b);
  if (indexes.length === 0) return [];
  const histogram = createLatencyHistogram();
  const seconds: BenchSecond[] = [];
  try {
    // Every second from the first to the last, so a second in which nothing came back reads 0.
    for (let index = indexes[0] as number; index <= (indexes.at(-1) as number); index++) {
      const intervals = byIndex.get(index) ?? [];
      histogram.reset();
      for (const interval of intervals) addEncoded(histogram, interval.latency);
      const sum = (key: 'answered' | 'ok' | 'errors'): number => intervals.reduce((n, i) => n + (i[key] ?? 0), 0);
      const p = histogram.totalCount > 0 ? percentilesMs(histogram) : undefined;
      seconds.push({
        startS: (index * LOG_INTERVAL_MS) / 1000,
        answered: sum('answered'),
        ok: sum('ok'),
        errors: sum('errors'),
        p50: p?.p50 ?? null,
        p99: p?.p99 ?? null,
        max: p?.max ?? null,
      });
    }
  } finally {
    histogram.destroy();
  }
  return seconds;
}

/** Between two reads of the server's stats: the batches it started and how deep its queue was. */
export interface ServerStep {
  /** Seconds from the run's start to the later read. */
  atS: number;
  batches: number;
  meanBatch: number | null;
  queueDepth: number;
}

/** The server's reads as steps on the run's clock (reads before the run are dropped but one). */
export function serverSteps(samples: readonly ServerSample[], startEpochMs: number): ServerStep[] {
  const steps: ServerStep[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as ServerSample;
    const b = samples[i] as ServerSample;
    const batches = b.batches - a.batches;
    steps.push({
      atS: (b.atEpochMs - startEpochMs) / 1000,
      batches,
      meanBatch: batches > 0 ? (b.batchItems - a.batchItems) / batches : null,
      queueDepth: b.queueDepth,
    });
  }
  return steps;
}

/** Batches by size between the first and the last read. */
export function batchSizeHistogram(first: readonly number[], last: readonly number[]): number[] {
  return last.map((count, size) => count - (first[size] ?? 0));
}
