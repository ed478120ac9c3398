import { createBatcher, type BatchingConfig } from '../core/create-batcher.js';
import { VirtualClock } from '../core/virtual-clock.js';
import { ServingPath, type ServingPathSetup } from './serving-path-model.js';

/** Connections of the closed loop that measures the capacity: bench -c 64, wrk -c 64, or more when batches need them. */
export function probeConnections(batching: Pick<BatchingConfig, 'instances' | 'maxBatchSize'>): number {
  return Math.max(64, 4 * batching.instances * batching.maxBatchSize);
}

/**
 * The most the simulated server answers per second over its serving path, as a closed loop
 * measures it (`bench -c 64`, wrk): `connections` clients, each sending its next request as soon
 * as it has read the answer to its last (its load generator's CPU, when it shares the host, on the
 * way), counted once the first third of the answers is past.
 *
 * Why not the highest rate of evenly spaced arrivals that is kept up with: over the serving path
 * a main thread that falls behind once stays behind (a worker's reply waits behind the requests
 * queued to be read, the instance idles meanwhile), so with no bound on the backlog whether a rate
 * "holds" flipped with small changes of a cost: as bench's CPU per request took values between
 * 0.070 and 0.094 ms, a bisection on it found anything from 770 to 973 req/s, in no order, for one
 * profile of PaddleOCR's classifier with two instances. A closed loop bounds
 * the backlog by its connections, as the real measurement does.
 */
export function closedLoopCapacityRps(
  setup: ServingPathSetup,
  batching: BatchingConfig,
  connections = probeConnections(batching),
): number {
  return closedLoop(setup, batching, connections).answeredRps;
}

/**
 * `connections` clients in a closed loop over the serving path, once the first third of the
 * answers is past: the answers a second, the mean time from a batch's start to its end, and the
 * mean size of those batches.
 */
export function closedLoop(
  setup: ServingPathSetup,
  batching: BatchingConfig,
  connections: number,
): { answeredRps: number; meanBatchMs: number; meanBatchSize: number } {
  const clock = new VirtualClock();
  const path = new ServingPath(clock, setup);
  const batcher = createBatcher<number, number>(
    { ...batching, maxQueueSize: connections + 1, requestTimeoutMs: 1e12 },
    clock,
    path,
  );
  const answers = Math.max(3000, 20 * connections);
  const measuredFrom = Math.floor(answers / 3);
  let sent = 0;
  let answered = 0;
  let fromMs = Number.POSITIVE_INFINITY;
  let toMs = 0;
  // Answers come a batch at a time: those at the span's first instant are before it, those at its last in it.
  let atFromMs = 0;
  let atToMs = 0;
  const measured = new Set<object>();
  let batchMs = 0;
  let batchItems = 0;
  let batches = 0;
  batcher.addObserver({
    // Batches of the measured span only: after it the loop drains, its last batches part-full.
    batchStarted: (batch, nowMs) => void (nowMs >= fromMs && toMs === 0 && measured.add(batch)),
    batchFinished: (batch, nowMs) => {
      if (!measured.delete(batch)) return;
      // From its start, as serve's batchline_model_execution_seconds: a batch handed to a mailbox
      // starts when the one ahead of it ends, not when it was handed over.
      batchMs += nowMs - batch.startedAtMs;
      batchItems += batch.inputs.length;
      batches++;
    },
  });
  const send = (): void => {
    const id = sent++;
    // The queue holds every connection's request and nothing expires: each one is admitted.
    path.arrive(
      () => void batcher.submit(String(id), id, () => (path.deliver === undefined ? read() : path.deliver(read))),
    );
  };
  const read = (): void => {
    answered++;
    const nowMs = clock.now();
    if (answered === measuredFrom) fromMs = nowMs;
    else if (answered > measuredFrom && nowMs === fromMs) atFromMs++;
    if (answered === answers) toMs = nowMs;
    else if (answered > answers && nowMs === toMs) atToMs++;
    // Every connection keeps sending until the measured span ends: a loop that stopped earlier
    // would be draining its last requests inside the span, faster than it runs.
    if (answered < answers) send();
  };
  for (let connection = 0; connection < connections; connection++) send();
  clock.run();
  // No time between the span's ends: nothing costs anything, as a zero service time's capacity.
  return {
    answeredRps:
      toMs > fromMs
        ? ((answers - measuredFrom - atFromMs + atToMs) * 1000) / (toMs - fromMs)
        : Number.POSITIVE_INFINITY,
    meanBatchMs: batches === 0 ? 0 : batchMs / batches,
    meanBatchSize: batches === 0 ? 0 : batchItems / batches,
  };
}
