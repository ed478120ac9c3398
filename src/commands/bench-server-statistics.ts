import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type * as GrpcJs from '@grpc/grpc-js';
import { inferRouteOf } from '../bench/default-body.js';
import type { BenchPlan } from '../bench/plan.js';
import { grpcModelOf } from '../bench/target-url.js';
import { getSideJson, type SideReads, sideReadsOf } from '../bench/side-reads.js';
import type { ServerBreakdown } from '../bench/result.js';
import { inferenceType } from '../protocol/grpc-proto-root.js';

const require = createRequire(import.meta.url);

/** The cumulative figures of one read, summed over the versions listed. */
interface Totals {
  inferences: number;
  executions: number;
  failed: number;
  /** Successes as the server counts them: rows in batchline, requests in Triton. */
  successCount: number;
  successNs: number;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
  atMs: number;
}

interface Duration {
  count?: number;
  ns?: number;
}

interface ModelStatsMessage {
  inference_count?: number;
  execution_count?: number;
  inference_stats?: Record<string, Duration | undefined>;
}

const READ_TIMEOUT_MS = 2000;
const MODEL_STATISTICS_PATH = '/inference.GRPCInferenceService/ModelStatistics';

type Reader = () => Promise<Totals | undefined>;

/**
 * The server's own split of a request's time over a run's measured window (`ServerBreakdown`),
 * as perf_analyzer's "Server:" section gives it: the difference of two reads of the statistics
 * extension (Triton's, and batchline's `/v2/models/{m}/stats` and ModelStatistics).
 * It reads them at the end of the warm-up (from the start `clockStarted` is told; before the
 * run when there is none) and again at `stop`: undefined when the URL is not an inference
 * route, the server has no statistics extension, or a read failed (the run is not the worse).
 */
export function startServerStatistics(plan: BenchPlan): {
  /** Settles when the first read is done: a run without a warm-up waits for it before sending. */
  first: Promise<void>;
  /** The run's clock started (epoch ms; RunHooks.onStart): the first read comes at the warm-up's end. */
  clockStarted(startEpochMs: number): void;
  /** Reads again (once, however often called) and gives the difference, or a warning of why there is none. */
  stop(): Promise<ServerReading>;
} {
  const target = readerFor(plan);
  let timer: NodeJS.Timeout | undefined;
  let reading = false;
  let settleUnread = (): void => {};
  let readFirst = (): void => {};
  const first =
    target === undefined
      ? Promise.resolve(undefined)
      : new Promise<Totals | undefined>((resolve) => {
          settleUnread = () => resolve(undefined);
          readFirst = () => {
            reading = true;
            void target.read().then(resolve);
          };
        });
  // No warm-up: read before the first send.
  if (plan.warmupMs === 0) readFirst();
  let stopped: Promise<ServerReading> | undefined;
  const readLast = async (): Promise<ServerReading> => {
    // Stopped within the warm-up (or before the clock started): there is no window to read.
    if (!reading) {
      clearTimeout(timer);
      settleUnread();
    }
    const before = await first;
    if (target === undefined || before === undefined) return {};
    const after = await target.read();
    if (after === undefined) return {};
    const back = wentBack(before, after);
    return back === undefined
      ? { server: breakdown(target, before, after) }
      : {
          warning: `the server's statistics of ${target.model} went back during the run (${back}): the model was loaded again or the server restarted, so there is no Server section`,
        };
  };
  return {
    first: first.then(() => undefined),
    clockStarted(startEpochMs) {
      if (reading || timer !== undefined || stopped !== undefined) return;
      const untilMs = startEpochMs + plan.warmupMs - (performance.timeOrigin + performance.now());
      timer = setTimeout(readFirst, Math.max(0, untilMs));
    },
    // Once: a second call (the run's `finally`) gets the same answer.
    stop: () => (stopped ??= readLast()),
  };
}

/** What a read holds: the window's figures, or why there are none to print (undefined: nothing to read). */
export interface ServerReading {
  server?: ServerBreakdown;
  warning?: string;
}

const COUNTERS: readonly [keyof Totals, string][] = [
  ['inferences', 'inferences'],
  ['executions', 'model runs'],
  ['failed', 'failed'],
  ['successCount', 'successes'],
];

/**
 * The first count that is lower at the second read, as `inferences 1000 to 5`: the model's
 * statistics began again (unloaded and loaded, the server restarted), and the difference of the
 * two reads is no window's; undefined when none went back.
 */
function wentBack(a: Totals, b: Totals): string | undefined {
  for (const [key, name] of COUNTERS) if (b[key] < a[key]) return `${name} ${a[key]} to ${b[key]}`;
  return undefined;
}

function breakdown(target: { model: string; version: string; source: string }, a: Totals, b: Totals): ServerBreakdown {
  const inferences = b.inferences - a.inferences;
  // Over the successes as the server counts them, as perf_analyzer divides: a mean per request
  // on Triton (which counts requests), per row on batchline (rows); alike for the time a row took.
  const successes = b.successCount - a.successCount;
  const mean = (ns: number): number => (successes > 0 ? ns / successes / 1e6 : 0);
  return {
    ...target,
    windowS: (b.atMs - a.atMs) / 1000,
    inferences,
    executions: b.executions - a.executions,
    failed: b.failed - a.failed,
    meanMs: {
      request: mean(b.successNs - a.successNs),
      queue: mean(b.queueNs - a.queueNs),
      computeInput: mean(b.computeInputNs - a.computeInputNs),
      computeInfer: mean(b.computeInferNs - a.computeInferNs),
      computeOutput: mean(b.computeOutputNs - a.computeOutputNs),
    },
  };
}

/**
 * How to read the URL's model's statistics, or undefined when the URL reaches no model. The
 * reads go as the run's requests do: with its -H headers (a gateway's authorization, a Host),
 * and past a certificate that does not verify when --insecure (perf_analyzer's -H reaches its
 * statistics requests too).
 */
function readerFor(plan: BenchPlan): { model: string; version: string; source: string; read: Reader } | undefined {
  const url = new URL(plan.url);
  const reads = sideReadsOf(plan);
  if (url.protocol === 'grpc:') {
    const { name, version } = grpcModelOf(url);
    return { model: name, version, source: 'ModelStatistics', read: () => readGrpc(url, name, version, reads.headers) };
  }
  const get = (target: URL): Promise<unknown> => getJson(target, reads);
  const route = inferRouteOf(url);
  if (route === undefined) return undefined;
  const version = route.version ?? '';
  const path = (model: string): string =>
    `/v2/models/${encodeURIComponent(model)}${version === '' ? '' : `/versions/${encodeURIComponent(version)}`}/stats`;
  // /v1/infer reaches the default model, which batchline's /v1/stats names; read once, at the first read.
  let model = route.model;
  const reader = {
    model: model ?? '',
    version,
    source: model === undefined ? 'GET /v2/models/{default}/stats' : `GET ${path(model)}`,
    read: async (): Promise<Totals | undefined> => {
      if (model === undefined) {
        const stats = (await get(new URL('/v1/stats', url))) as { defaultModel?: unknown } | undefined;
        if (typeof stats?.defaultModel !== 'string') return undefined;
        model = stats.defaultModel;
        reader.model = model;
        reader.source = `GET ${path(model)}`;
      }
      const answer = (await get(new URL(path(model), url))) as { model_stats?: unknown } | undefined;
      return totalsOf(answer?.model_stats);
    },
  };
  return reader;
}

function totalsOf(list: unknown): Totals | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const totals: Totals = {
    inferences: 0,
    executions: 0,
    failed: 0,
    successCount: 0,
    successNs: 0,
    queueNs: 0,
    computeInputNs: 0,
    computeInferNs: 0,
    computeOutputNs: 0,
    atMs: performance.now(),
  };
  for (const stats of list as ModelStatsMessage[]) {
    const s = stats.inference_stats ?? {};
    const ns = (key: string): number => Number(s[key]?.ns ?? 0);
    totals.inferences += Number(stats.inference_count ?? 0);
    totals.executions += Number(stats.execution_count ?? 0);
    totals.failed += Number(s.fail?.count ?? 0);
    totals.successCount += Number(s.success?.count ?? 0);
    totals.successNs += ns('success');
    totals.queueNs += ns('queue');
    totals.computeInputNs += ns('compute_input');
    totals.computeInferNs += ns('compute_infer');
    totals.computeOutputNs += ns('compute_output');
  }
  return Object.values(totals).every(Number.isFinite) ? totals : undefined;
}

/** A GET's JSON answer (side-reads.ts), bounded in size and time; undefined for anything but a 200 of JSON. */
async function getJson(url: URL, reads: SideReads): Promise<unknown> {
  try {
    return await getSideJson(url, reads, READ_TIMEOUT_MS);
  } catch {
    return undefined;
  }
}

function readGrpc(
  url: URL,
  name: string,
  version: string,
  headers: Record<string, string>,
): Promise<Totals | undefined> {
  const grpc = require('@grpc/grpc-js') as typeof GrpcJs;
  const client = new grpc.Client(`${url.hostname}:${url.port}`, grpc.credentials.createInsecure());
  const requestType = inferenceType('ModelStatisticsRequest');
  const responseType = inferenceType('ModelStatisticsResponse');
  return new Promise<Totals | undefined>((resolve) => {
    client.makeUnaryRequest(
      MODEL_STATISTICS_PATH,
      (message: object) => Buffer.from(requestType.encode(requestType.fromObject(message)).finish()),
      (bytes: Buffer) =>
        responseType.toObject(responseType.decode(bytes), { longs: Number, defaults: true }) as {
          model_stats?: unknown;
        },
      { name, version },
      metadataOf(grpc, headers),
      { deadline: Date.now() + READ_TIMEOUT_MS },
      (error, answer) => resolve(error === null ? totalsOf(answer?.model_stats) : undefined),
    );
  }).finally(() => client.close());
}

/** The run's headers as gRPC metadata, as grpc-transport.ts sends them with each call. */
function metadataOf(grpc: typeof GrpcJs, headers: Record<string, string>): GrpcJs.Metadata {
  const metadata = new grpc.Metadata();
  for (const [name, value] of Object.entries(headers)) if (name !== 'host') metadata.set(name, value);
  return metadata;
}
