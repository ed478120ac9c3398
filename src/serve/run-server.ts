import type { Server } from 'node:http';
import { loadModel } from '../model/load-model.js';
import type { ServeConfig } from '../options/serve.js';
import { buildServer } from './build-server.js';

export interface ServeIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Resolves when the server should shut down; default: the first SIGINT or SIGTERM. */
  shutdownSignal?: Promise<string>;
}

/**
 * `batchline serve`: listen at once (so /healthz answers and /readyz says 503 while the model
 * loads), load the model, serve until SIGINT/SIGTERM, then drain and close.
 */
export async function runServer(config: ServeConfig, io: ServeIo = { stdout: process.stdout, stderr: process.stderr }): Promise<void> {
  const { app, runtime } = buildServer(config);
  const shutdown = io.shutdownSignal ?? firstSignal(['SIGINT', 'SIGTERM']);
  const address = await app.listen({ host: config.host, port: config.port });
  let model;
  try {
    model = await loadModel(config.model, { instances: config.instances, intraOpThreads: config.intraOpThreads, execution: config.execution });
  } catch (error) {
    await app.close();
    throw error;
  }
  runtime.attach(model);
  io.stdout.write(
    `batchline serve: listening on ${address} model=${model.version} inputs=${model.inputs.map((s) => `${s.name}${JSON.stringify(s.itemShape)}:${s.type}`).join(',')} ` +
      `max_batch_size=${config.maxBatchSize} batch_window_ms=${config.batchWindowMs} max_queue_size=${config.maxQueueSize} ` +
      `request_timeout_ms=${config.requestTimeoutMs} instances=${config.instances} model_latency_ms=${config.modelLatencyMs}\n`,
  );

  const signal = await shutdown;
  const before = runtime.runtime!.batcher;
  io.stdout.write(`batchline serve: ${signal}: draining ${before.queueDepth} queued and ${before.runningCount} running requests (up to ${config.drainTimeoutMs} ms)\n`);
  const drainEndsAtMs = performance.now() + config.drainTimeoutMs;
  await runtime.drain(config.drainTimeoutMs);
  // Keep answering 503 (with Connection: close) until clients have let go, so that closing the
  // listener does not reset a connection that is just arriving.
  await untilNoConnections(app.server, drainEndsAtMs);
  await app.close();
  await model.close();
  const counts = before.counts;
  io.stdout.write(`batchline serve: stopped; ${counts.outcomes.ok} ok, ${counts.outcomes.shutdown} answered 503 at shutdown\n`);
}

async function untilNoConnections(server: Server, deadlineMs: number): Promise<void> {
  const openConnections = (): Promise<number> =>
    new Promise((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count)));
  while (performance.now() < deadlineMs && (await openConnections()) > 0) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function firstSignal(signals: NodeJS.Signals[]): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      for (const s of signals) process.off(s, onSignal);
      // A second signal during the drain is ignored here; the drain timeout bounds the wait.
      for (const s of signals) process.on(s, () => {});
      resolve(signal);
    };
    for (const s of signals) process.on(s, onSignal);
  });
}
