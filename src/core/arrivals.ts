import type { SeededRandom } from './rng.js';

/**
 * Arrival processes: when requests are meant to arrive (or be sent), in ms from the start of a
 * run. Shared by `bench` (the open-loop send schedule) and `simulate` (the arrival trace).
 *
 * A process is a unit-rate sequence mapped through the inverse of the cumulative rate Λ(t):
 * constant arrivals sit at Λ = 0, 1, 2, …; Poisson arrivals at sums of Exp(1) draws. That one
 * mapping gives ramps and steps (`--stages`) for both kinds.
 */
export interface ArrivalProcess {
  /** Time of the next arrival (ms), non-decreasing; undefined when the schedule has ended. */
  next(): number | undefined;
}

/** A stage ramps the rate linearly from the previous stage's rate to `targetRps` over `durationMs`. */
export interface Stage {
  durationMs: number;
  targetRps: number;
}

export type ArrivalKind = 'constant' | 'poisson';

interface RateSegment {
  startMs: number;
  durationMs: number;
  startRps: number;
  endRps: number;
  /** Cumulative expected arrivals Λ at the segment's start. */
  startCount: number;
}

/** The rate over time as linear segments, with Λ and its inverse. */
export class RateProfile {
  private readonly segments: RateSegment[] = [];
  readonly totalMs: number;

  /** A constant rate for `durationMs` (Infinity for no end). */
  static constant(rateRps: number, durationMs = Number.POSITIVE_INFINITY): RateProfile {
    return new RateProfile([{ durationMs, targetRps: rateRps }], rateRps);
  }

  constructor(stages: readonly Stage[], startRps = 0) {
    let startMs = 0;
    let count = 0;
    let rate = startRps;
    for (const stage of stages) {
      if (!(stage.durationMs >= 0) || !(stage.targetRps >= 0))
        throw new RangeError('stages need durations and rates >= 0');
      this.segments.push({
        startMs,
        durationMs: stage.durationMs,
        startRps: rate,
        endRps: stage.targetRps,
        startCount: count,
      });
      count += ((rate + stage.targetRps) / 2) * (stage.durationMs / 1000);
      startMs += stage.durationMs;
      rate = stage.targetRps;
    }
    this.totalMs = startMs;
  }

  /** The rate when it never changes and never ends (`RateProfile.constant` without a duration). */
  get endlessRps(): number | undefined {
    const only = this.segments.length === 1 ? this.segments[0] : undefined;
    return only !== undefined && only.durationMs === Number.POSITIVE_INFINITY && only.startRps === only.endRps
      ? only.startRps
      : undefined;
  }

  /** Rate (requests per second) at `atMs`. */
  rateAt(atMs: number): number {
    const segment = this.segments.find((s) => atMs < s.startMs + s.durationMs) ?? this.segments.at(-1);
    if (segment === undefined) return 0;
    const fraction =
      segment.durationMs === Number.POSITIVE_INFINITY ? 0 : Math.min(1, (atMs - segment.startMs) / segment.durationMs);
    return segment.startRps + (segment.endRps - segment.startRps) * fraction;
  }

  /** Expected arrivals by `atMs`, Λ(t). */
  expectedCount(atMs: number): number {
    let total = 0;
    for (const s of this.segments) {
      if (atMs <= s.startMs) break;
      const t = Math.min(atMs - s.startMs, s.durationMs) / 1000;
      const slope = s.durationMs === Number.POSITIVE_INFINITY ? 0 : (s.endRps - s.startRps) / (s.durationMs / 1000);
      total = s.startCount + s.startRps * t + (slope * t * t) / 2;
    }
    return total;
  }

  /** The first segment from `fromSegment` on in which Λ(t) reaches `count`, or -1 past the end. */
  segmentFor(count: number, fromSegment = 0): number {
    for (let index = fromSegment; index < this.segments.length; index++) {
      const s = this.segments[index] as RateSegment;
      const wanted = count - s.startCount;
      if (wanted <= 0) return index;
      if (s.durationMs === Number.POSITIVE_INFINITY) return s.startRps > 0 ? index : -1;
      if (wanted <= ((s.startRps + s.endRps) / 2) * (s.durationMs / 1000) && s.startRps + s.endRps > 0) return index;
    }
    return -1;
  }

  /** The time at which Λ(t) reaches `count` inside segment `index` (from `segmentFor`). */
  timeInSegment(index: number, count: number): number {
    const s = this.segments[index] as RateSegment;
    const wanted = count - s.startCount;
    if (wanted <= 0) return s.startMs;
    if (s.durationMs === Number.POSITIVE_INFINITY || s.endRps === s.startRps)
      return s.startMs + Math.min(wanted / s.startRps, s.durationMs / 1000) * 1000;
    // Solve startRps·t + slope·t²/2 = wanted in the numerically stable form.
    const durationS = s.durationMs / 1000;
    const slope = (s.endRps - s.startRps) / durationS;
    const root = Math.sqrt(Math.max(0, s.startRps * s.startRps + 2 * slope * wanted));
    return s.startMs + Math.min((2 * wanted) / (s.startRps + root), durationS) * 1000;
  }
}

/** Arrivals following `profile`: evenly spaced (`constant`) or a Poisson process. */
export function arrivalsFromProfile(profile: RateProfile, kind: ArrivalKind, rng?: SeededRandom): ArrivalProcess {
  if (kind === 'poisson' && rng === undefined) throw new Error('poisson arrivals need a seeded generator');
  const endlessRps = profile.endlessRps;
  if (kind === 'poisson' && endlessRps !== undefined && endlessRps > 0)
    return endlessPoisson(endlessRps, rng as SeededRandom);
  let count = kind === 'constant' ? 0 : (rng as SeededRandom).exponential();
  let segment = 0;
  let lastMs = 0;
  return {
    next(): number | undefined {
      const found = profile.segmentFor(count, segment);
      if (found < 0) return undefined;
      const atMs = profile.timeInSegment(found, count);
      if (atMs >= profile.totalMs) return undefined;
      segment = found;
      lastMs = Math.max(lastMs, atMs);
      count += kind === 'constant' ? 1 : (rng as SeededRandom).exponential();
      return lastMs;
    },
  };
}

/**
 * Poisson arrivals at one rate for ever, simulate's default: the times `timeInSegment` gives on
 * such a profile (Λ⁻¹(count) = count / rate, the same operations), without the walk over
 * segments that a ramp needs on every arrival.
 */
function endlessPoisson(rateRps: number, rng: SeededRandom): ArrivalProcess {
  let count = rng.exponential();
  return {
    next(): number {
      const atMs = (count / rateRps) * 1000;
      count += rng.exponential();
      return atMs;
    },
  };
}

/** wrk's counts with a unit: 2k, 1.5M, 1G. */
const METRIC_SUFFIXED = /^(\d+(?:\.\d+)?)([kmg])$/i;
const METRIC_MULTIPLIER: Record<string, number> = { k: 1e3, m: 1e6, g: 1e9 };
const PLAIN_DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

/** `2k` as 2000, `1.5M` as 1500000 (wrk's units, which the options' counts take too); undefined without a unit. */
export function metricSuffixed(text: string): number | undefined {
  const suffixed = METRIC_SUFFIXED.exec(text);
  return suffixed === null
    ? undefined
    : Number(suffixed[1]) * (METRIC_MULTIPLIER[(suffixed[2] as string).toLowerCase()] as number);
}

/**
 * A rate as -R reads it: plain decimal, or with wrk's units (`2k`). NaN otherwise: Number() took
 * `0x10` and `1e3` in a stage or a sweep step, which -R refuses.
 */
export function parseRate(text: string): number {
  const trimmed = text.trim();
  return metricSuffixed(trimmed) ?? (PLAIN_DECIMAL.test(trimmed) ? Number(trimmed) : NaN);
}

/** Parses `10s:200,10s:800,20s:800` (duration:rate per stage) into stages. */
export function parseStages(text: string, parseDurationMs: (text: string) => number | undefined): Stage[] {
  const stages = text.split(',').map((part) => {
    const [durationText, rateText, ...extra] = part.split(':');
    const durationMs = durationText === undefined ? undefined : parseDurationMs(durationText);
    const targetRps = rateText === undefined ? NaN : parseRate(rateText);
    if (extra.length > 0 || durationMs === undefined || !Number.isFinite(targetRps) || targetRps < 0) {
      throw new RangeError(`stage '${part}' is not duration:rate, such as 10s:200`);
    }
    return { durationMs, targetRps };
  });
  // All zeros plan no arrival: bench sent one anyway (at 0) and simulate ran an empty report.
  if (stages.every((stage) => stage.targetRps === 0))
    throw new RangeError('every stage has rate 0, so nothing would be sent; give a stage a rate above 0');
  return stages;
}
