import { performance } from 'node:perf_hooks';
import type { BatcherSnapshot } from '../core/batcher-stats.js';
import { servesModel, type ServerStats } from '../stats-contract/server-stats.js';
import { parseVersion } from '../stats-contract/version-ref.js';
import { inferRouteOf } from './default-body.js';
import { startStatsPoller } from '../stats-contract/stats-poller.js';
import type { BenchPlan } from './plan.js';
import { PLAIN_SIDE_READS, type SideReads } from './side-reads.js';
import type { BenchRun } from './result.js';

/** The target's own figures at one instant, read from a batchline server's `GET /v1/stats`. */
export interface ServerSample {
  /** Epoch ms of the read. */
  atEpochMs: number;
  batches: number;
  batchItems: number;
  queueDepth: number;
  maxQueueSize: number;
  maxBatchSize: number;
}

/**
 * What the server showed during a run, or why it showed nothing. Batches by size are kept at
 * the first and the last read only (a long run at --max-batch-size 4096 would otherwise keep
 * thousands of counts per read).
 */
export type ServerSamples =
  | { ok: true; samples: ServerSample[]; firstBatchSizeCounts: number[]; lastBatchSizeCounts: number[] }
  | { ok: false; why: string };

/** A bench run with what only `--html` records: the server's own figures while it ran. */
export interface RecordedRun {
  run: BenchRun;
  plan: BenchPlan;
  samples: ServerSamples;
}

/**
 * The reads of windows run one after another (`--stable`'s kept windows), as reads of one run:
 * the server's counts only grow, so a step from one window's last read to the next's first is
 * the pause between them. A window with no reads says why for all.
 */
export function joinServerSamples(parts: readonly ServerSamples[]): ServerSamples {
  const notRead = parts.find((p) => !p.ok);
  if (notRead !== undefined || parts.length === 0) return notRead ?? { ok: false, why: 'no window was measured' };
  const read = parts as Extract<ServerSamples, { ok: true }>[];
  return {
    ok: true,
    samples: read.flatMap((p) => p.samples),
    firstBatchSizeCounts: (read[0] as (typeof read)[number]).firstBatchSizeCounts,
    lastBatchSizeCounts: (read.at(-1) as (typeof read)[number]).lastBatchSizeCounts,
  };
}

/** Reads per second: enough to see the queue move, few enough to cost the server nothing. */
const READS_PER_SECOND = 4;

/**
 * For `bench --html` against a batchline server: reads its `/v1/stats` four times a second while
 * the run lasts, for the batch sizes and the queue depth only the server knows. The first read
 * decides: a target that is not a batchline server is read once and left alone. `reads`: the
 * run's -H headers and --insecure (side-reads.ts), without which a server behind a gateway's
 * authorization or a certificate of its own was called no batchline server.
 */
export function startServerSamples(
  targetUrl: string,
  reads: SideReads = PLAIN_SIDE_READS,
): { stop(): Promise<ServerSamples> } {
  // /v1/stats is on the server's HTTP port, which a grpc:// URL does not name.
  if (new URL(targetUrl).protocol === 'grpc:')
    return {
      stop: async () => ({
        ok: false,
        why: "a grpc:// run reads no GET /v1/stats: that is on a batchline server's HTTP port; load the model's http://…/v2/models/NAME/infer for these charts (the text report's Server section is read over gRPC)",
      }),
    };
  const samples: ServerSample[] = [];
  let firstCounts: number[] = [];
  let lastCounts: number[] = [];
  let refused: string | undefined;
  const url = new URL(targetUrl);
  const poller = startStatsPoller({
    statsUrl: new URL('/v1/stats', targetUrl).toString(),
    intervalMs: 1000 / READS_PER_SECOND,
    timeoutMs: 1000,
    headers: reads.headers,
    insecureTls: reads.insecureTls,
    now: () => performance.timeOrigin + performance.now(),
    onRead: (read) => {
      if (!read.ok) {
        if (samples.length === 0 && refused === undefined) {
          refused = read.error;
          void poller.stop();
        }
        return;
      }
      // A server serving no model (every version removed) has no batches or queue to show.
      if (!servesModel(read.stats)) return;
      const s = snapshotFor(url, read.stats);
      if (s === undefined) return;
      samples.push({
        atEpochMs: read.atMs,
        batches: s.counts.batches,
        batchItems: s.counts.batchItems,
        queueDepth: s.queueDepth,
        maxQueueSize: s.maxQueueSize,
        maxBatchSize: s.maxBatchSize,
      });
      if (samples.length === 1) firstCounts = [...s.batchSizeCounts];
      lastCounts = s.batchSizeCounts;
    },
  });
  return {
    async stop(): Promise<ServerSamples> {
      await poller.stop();
      if (samples.length >= 2)
        return { ok: true, samples, firstBatchSizeCounts: firstCounts, lastBatchSizeCounts: [...lastCounts] };
      return {
        ok: false,
        why:
          refused !== undefined
            ? `the target is not a batchline server (GET /v1/stats: ${refused})`
            : 'the server answered GET /v1/stats fewer than twice during the run',
      };
    },
  };
}

/**
 * The batcher figures of the model version `url` reaches: an inference route's model (the
 * version it names, or its highest ready one, which the server serves), or the default model's
 * (the top level) for `/v1/infer` and any other route; undefined when the server has no such
 * version. The top level alone drew the default model's batches for a run on another.
 */
export function snapshotFor(url: URL, stats: ServerStats): BatcherSnapshot | undefined {
  const route = inferRouteOf(url);
  if (route?.model === undefined || stats.models === undefined) return stats.snapshot;
  const wanted = parseVersion(route.version ?? undefined);
  const ofModel = stats.models.filter((v) => v.name === route.model);
  const chosen =
    typeof wanted === 'number'
      ? ofModel.find((v) => v.version === wanted)
      : ofModel.filter((v) => v.state === 'ready').sort((a, b) => b.version - a.version)[0];
  return chosen?.snapshot;
}
