import { parseHeaderLines } from '../options/header-lines.js';
import { parseStages, type Stage } from '../core/arrivals.js';
import { freshSeed } from '../core/rng.js';
import { BENCH_OPTIONS, type BenchOptionValues } from '../options/bench.js';
import { durationText, parseDurationMs } from '../options/schema.js';
import { parseObjective, type Objective } from '../options/objective.js';
import { invalidOption, invalidOptionValue as invalid, quotedValue } from '../options/invalid-option-value.js';
import { textGiven } from '../options/given.js';
import type { BenchPlan } from './plan.js';
import { basicAuthFromUrl, parseTargetUrl } from './target-url.js';
import { parseConnectionsSweep } from './connections-sweep.js';
import { parseSlo, parseSweep } from './sweep.js';
import type { StabilityPlan } from './stability-rule.js';
import { stabilityOf } from './stable-options.js';

/** Where the request body comes from, resolved later (reading a file, probing the target). */
export type BodySource = { kind: 'inline'; text: string } | { kind: 'file'; path: string } | { kind: 'none' };

export interface ValidatedBench {
  /** The plan with the body still unresolved (`bodies` empty, `method` possibly defaulted later). */
  plan: BenchPlan;
  bodySource: BodySource;
  /** Whether the user chose the method (otherwise a body makes it POST). */
  methodGiven: boolean;
  /** Whether the user set content-type (as an option or a header). */
  contentTypeGiven: boolean;
  /** --stable: windows until three agree; undefined for one measured window of --duration. */
  stability?: StabilityPlan | undefined;
}

/**
 * Checks everything the schema cannot: the URL, headers, seed, stages, and how options combine.
 * Pure: no I/O, so `bench --help` and bad options stay fast. Throws INVALID_OPTION.
 */
export function validateBench(
  urlText: string | undefined,
  o: BenchOptionValues,
  headerLines: readonly string[],
  explicit: {
    method: boolean;
    rate: boolean;
    duration: boolean;
    slo?: boolean;
    seed?: boolean;
    /** -c given on the command line (BENCH_CONNECTIONS set for every run of a CI job does not refuse a sweep). */
    connections?: boolean;
  },
  entropy: number,
): ValidatedBench {
  const url = parseTargetUrl(urlText);
  // The lean client dropped content-length and transfer-encoding without a word, and undici failed every request on them.
  const headers = parseHeaderLines(headerLines, '--header', 'bench frames the body itself (its length from --body)');
  basicAuthFromUrl(url, headers);
  if (url.protocol === 'grpc:' && o.httpClient !== 'auto')
    invalid('--http-client', o.httpClient, 'auto with a grpc:// URL (gRPC has its own client, grpc-js)');
  if (url.protocol === 'grpc:' && explicit.method)
    invalid('--method', o.method, 'no method with a grpc:// URL (every call is ModelInfer)');
  if (o.httpClient === 'lean' && url.protocol !== 'http:')
    invalid(
      '--http-client',
      o.httpClient,
      'undici or auto for an https:// URL (the lean client speaks plain http only)',
    );
  if (/(^|,)\s*close\s*(,|$)/i.test(headers.connection ?? '') && o.pipelining > 1)
    invalid(
      '--pipelining',
      String(o.pipelining),
      "1 with -H 'connection: close': pipelined requests need a connection that stays open",
    );
  // From BENCH_SEED alone, its refusal names BENCH_SEED (--seed): the command names it so (named-as-given.ts).
  const seed = o.seed === undefined ? freshSeed(entropy) : parseSeed(o.seed, '--seed');
  let stages: Stage[] | undefined;
  if (o.stages !== undefined) {
    if (explicit.rate) invalid('--stages', o.stages, 'either --stages or --rate, not both');
    if (explicit.duration)
      invalid('--stages', o.stages, 'either --stages or --duration, not both (the stages set the length)');
    try {
      stages = parseStages(o.stages, parseDurationMs);
    } catch (error) {
      invalid('--stages', o.stages, `duration:rate steps such as 10s:200,10s:800 (${(error as Error).message})`);
    }
    checkStageBounds(o.stages, stages);
  }
  // Each sets the run's length: --requests won silently over --duration (where hey and oha let
  // the duration win), and a sweep's steps of --requests had no planned end, so no trend judged them.
  if (o.requests > 0) {
    const requests = String(o.requests);
    if (explicit.duration) invalid('--requests', requests, 'either --requests or --duration, not both');
    if (stages !== undefined) invalid('--requests', requests, 'either --requests or --stages, not both');
    if (o.sweep !== undefined)
      invalid('--requests', requests, 'no --requests with --sweep (each step lasts --duration)');
  }
  if (o.sweepConnections !== undefined) checkConnectionsSweep(o, stages !== undefined, explicit.connections === true);
  // --slo judges sweep steps only: given alone it was ignored, and a missed objective exited 0.
  if (explicit.slo === true && o.sweep === undefined && o.sweepConnections === undefined)
    invalid(
      '--slo',
      o.slo,
      "a --sweep or --sweep-connections to judge; a single run is judged by --threshold (such as --threshold 'p99<100ms')",
    );
  // A single run has no later step to leave out: the flag would change nothing.
  if (o.stopOnMiss && o.sweep === undefined && o.sweepConnections === undefined)
    invalid(
      '--stop-on-miss',
      'true',
      'a --sweep or --sweep-connections whose steps --slo judges; a single run is judged by --threshold',
    );
  if (o.sweep !== undefined) {
    // -R's bound holds for every step: a step of 1e9 req/s held the generator many times its length.
    if (parseSweep(o.sweep).some((rate) => rate > MAX_RATE_RPS))
      invalid('--sweep', o.sweep, `rates up to ${MAX_RATE_RPS} req/s, as -R`);
    parseSlo(o.slo);
    if (stages !== undefined) invalid('--sweep', o.sweep, 'either --sweep or --stages, not both');
    // The sweep's rates were run and --rate dropped without a word (simulate refuses the same).
    if (o.rate > 0)
      invalid('--sweep', o.sweep, `either --sweep or --rate (${o.rate}), not both: the sweep gives each step's rate`);
  }
  const mode = stages !== undefined || o.rate > 0 || o.sweep !== undefined ? 'open' : 'closed';
  if (mode === 'closed') refuseOpenLoopOptions(o, explicit.seed === true);
  const stagesMs = stages?.reduce((sum, s) => sum + s.durationMs, 0);
  if (stagesMs !== undefined && stagesMs <= o.warmup) refuseWarmupBeyondStages(o, stagesMs);
  if (o.contentType !== undefined) {
    if (/[\r\n\0]/.test(o.contentType))
      invalid('--content-type', JSON.stringify(o.contentType).slice(1, -1), 'a value without CR, LF or NUL');
    headers['content-type'] = o.contentType;
  }
  const bodySource: BodySource =
    o.body === undefined
      ? { kind: 'none' }
      : o.body.startsWith('@')
        ? { kind: 'file', path: o.body.slice(1) }
        : { kind: 'inline', text: o.body };
  const plan: BenchPlan = {
    url: url.href,
    // What the reports print before the URL: over gRPC the call, not the HTTP default GET.
    method: url.protocol === 'grpc:' ? 'ModelInfer' : o.method,
    headers,
    bodies: [],
    mode,
    connections: o.connections,
    pipelining: o.pipelining,
    timeoutMs: o.timeout,
    warmupMs: o.warmup,
    durationMs: stagesMs !== undefined ? stagesMs - o.warmup : o.duration,
    maxRequests: o.requests,
    rateRps: o.rate,
    stages,
    arrival: o.arrival,
    seed,
    maxInFlight: o.maxInFlight,
    workers: o.workers,
    httpClient: o.httpClient,
    keepIntervals: o.hdrLog !== undefined,
    insecureTls: o.insecure,
  };
  checkWorkerShares(plan, o.sweepConnections === undefined ? undefined : parseConnectionsSweep(o.sweepConnections));
  const stability = stabilityOf(o, explicit.duration, stages !== undefined, o.workers);
  return { plan, bodySource, methodGiven: explicit.method, contentTypeGiven: 'content-type' in headers, stability };
}

/**
 * Options of the open loop's schedule, given to a closed loop (no --rate, --stages or --sweep):
 * the run went ahead without them, and `--arrival poisson --seed 7` measured evenly-paced
 * senders that were no schedule at all.
 */
function refuseOpenLoopOptions(o: BenchOptionValues, seedGiven: boolean): void {
  const why = (what: string) =>
    `an open loop (-R/--rate, --stages or --sweep): ${what}; a closed loop sends each request when the last one's answer comes`;
  if (o.arrival !== 'constant') invalid('--arrival', o.arrival, why('it spaces the sends of the schedule'));
  if (seedGiven && o.seed !== undefined) invalid('--seed', o.seed, why("it seeds the schedule's Poisson arrivals"));
  if (o.maxInFlight !== BENCH_OPTIONS.maxInFlight.default)
    invalid('--max-in-flight', String(o.maxInFlight), why('it caps the requests a schedule has outstanding'));
}

/**
 * `--sweep-connections`: closed-loop steps, so none of what sets an open loop's rate, and no
 * other length or count of connections than its own (-c was run over by the steps' counts).
 */
function checkConnectionsSweep(o: BenchOptionValues, withStages: boolean, connectionsGiven: boolean): void {
  const text = o.sweepConnections as string;
  parseConnectionsSweep(text);
  parseSlo(o.slo);
  const closed = 'a closed loop of each count of connections';
  if (o.sweep !== undefined)
    invalid(
      '--sweep-connections',
      text,
      `either --sweep-connections or --sweep, not both: ${closed}, or open-loop rates`,
    );
  if (o.rate > 0)
    invalid(
      '--sweep-connections',
      text,
      `either --sweep-connections or --rate (${o.rate}), not both: ${closed} has no rate`,
    );
  if (withStages)
    invalid('--sweep-connections', text, `either --sweep-connections or --stages, not both: ${closed} has no rate`);
  if (connectionsGiven)
    invalid(
      '--sweep-connections',
      text,
      `either --sweep-connections or -c/--connections (${o.connections}), not both: the sweep gives each step's connections`,
    );
  if (o.requests > 0)
    invalid('--requests', String(o.requests), 'no --requests with --sweep-connections (each step lasts --duration)');
}

/** Each worker thread needs a share of at least one connection, request and in-flight slot. */
function checkWorkerShares(plan: BenchPlan, sweptConnections?: readonly number[]): void {
  const w = plan.workers;
  if (w <= 1) return;
  const fewest = sweptConnections === undefined ? undefined : Math.min(...sweptConnections);
  if (fewest !== undefined && fewest < w)
    invalid(
      '--workers',
      String(w),
      `at most the fewest connections of --sweep-connections (${fewest}): each thread needs a connection of its own`,
    );
  // A sweep's steps set the connections: BENCH_CONNECTIONS' count is not run.
  if (fewest === undefined && plan.connections < w)
    invalid(
      '--workers',
      String(w),
      `at most --connections (${plan.connections}): each thread needs a connection of its own`,
    );
  if (plan.maxRequests > 0 && plan.maxRequests < w)
    invalid(
      '--workers',
      String(w),
      `at most --requests (${plan.maxRequests}): each thread needs a share of the requests`,
    );
  if (plan.maxInFlight < w) invalid('--workers', String(w), `at most --max-in-flight (${plan.maxInFlight})`);
}

function parseSeed(text: string, name: string): number {
  const seed = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(seed) || seed > 0xffffffff)
    invalid(name, text, 'an integer from 0 to 4294967295');
  return seed;
}

/**
 * A --warmup as long as the stages leaves nothing to measure. Refused with the value as the user
 * typed it (`got '3s'`; it said `got '3000 ms'`), or as the default it is when not given.
 */
function refuseWarmupBeyondStages(o: BenchOptionValues, stagesMs: number): never {
  const given = textGiven(o, 'warmup');
  const expected = `less than the stages' total of ${durationText(stagesMs)}`;
  if (given !== undefined) invalid('--warmup', given, expected);
  throw invalidOption('--warmup', quotedValue(durationText(o.warmup)), expected, 'the default');
}

/** The bound of -R, which a stage's and a sweep step's rate share. */
const MAX_RATE_RPS = BENCH_OPTIONS.rate.max;

/**
 * What -R and -d bound, bounded in the stages too: a stage of 1e9 req/s, or of a million hours,
 * was run (the first held the generator many seconds past its end), and stages of no length at
 * all were blamed on the default --warmup.
 */
function checkStageBounds(text: string, stages: readonly Stage[]): void {
  const fast = stages.find((stage) => stage.targetRps > MAX_RATE_RPS);
  if (fast !== undefined)
    invalid(
      '--stages',
      text,
      `a rate from 0 to ${MAX_RATE_RPS} req/s, as -R, in every stage (one has ${fast.targetRps})`,
    );
  const totalMs = stages.reduce((sum, stage) => sum + stage.durationMs, 0);
  const maxMs = BENCH_OPTIONS.duration.maxMs;
  if (totalMs > maxMs) invalid('--stages', text, `a total length up to ${maxMs / 1000} s, as -d`);
  if (totalMs === 0) invalid('--stages', text, 'a total length above 0 (every stage lasts 0 s)');
}

/**
 * `--threshold` (repeatable, as k6's thresholds): each an objective in the grammar `--slo` uses,
 * judged on a single run; a bare `errors<1%` is a threshold of its own.
 */
export function parseThresholds(
  texts: readonly string[],
  sweep: string | undefined,
  sweepConnections?: string | undefined,
): Objective[] {
  if (texts.length > 0 && sweep !== undefined)
    invalid('--threshold', texts[0] as string, 'a single run; with --sweep, give the objective with --slo');
  if (texts.length > 0 && sweepConnections !== undefined)
    invalid('--threshold', texts[0] as string, 'a single run; with --sweep-connections, give the objective with --slo');
  return texts.map((text) => parseObjective(text, { flag: '--threshold', allowRatioOnly: true }));
}
