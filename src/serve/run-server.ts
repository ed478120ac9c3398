import { performance } from 'node:perf_hooks';
import { startupVersions } from './startup.js';
import type { ServeConfig } from '../options/serve.js';
import { buildServer } from './build-server.js';
import { DrainingConnections } from './drain-connections.js';
import { drainAndClose, listen, startGrpc, wildcardNote } from './start-server.js';
import { FailureLog, stderrLogSink } from './failure-log.js';
import type { RequestsInFlight } from './requests-in-flight.js';
import { SecondChance, watchSignals } from './signals.js';
import { stopWaitingOnWorkerStarts } from './young-generation.js';
import { versionLine, versionsWarningLines } from './version-log.js';
import type { StatsAnswer } from '../stats-contract/server-stats.js';

export interface ServeIo {
  stdout: NodeJS.WritableStream;
  /** Where errors are logged. */
  stderr: NodeJS.WritableStream;
  /**
   * Resolves with a signal name when the server should shut down; default: the first signal
   * that drains (`SIGNAL_ACTIONS`). `force` resolves on a second one: stop waiting for the drain.
   */
  shutdownSignal?: Promise<string>;
  forceSignal?: Promise<string>;
  /**
   * What a person sees of the running server (the command's dashboard or plain lines with a
   * summary every 10 s); default: the lifecycle lines on `stdout`.
   */
  startOutput?(server: ServeOutputSource): Promise<ServeOutput>;
}

/** What a server's output reads and tells it. */
export interface ServeOutputSource {
  /** What /v1/stats answers: undefined while the start-up models load. */
  readStats(): StatsAnswer | undefined;
  /** The output's own quit (the dashboard's `q`, or Ctrl-C pressed there), named by its key: counts as a signal. */
  onQuit(key: string): void;
}

/** Where a running server writes its lifecycle lines (start-up, drain, stop). */
export interface ServeOutput {
  log(line: string): void;
  stop(): void;
}

/**
 * `batchline serve`: listen at once (so /healthz answers and /readyz says 503 while the model
 * loads), load the model, serve until a signal that drains (SIGTERM, SIGINT, SIGQUIT, SIGHUP:
 * `signals.ts`), then drain and close within `--drain-timeout-ms`. A second signal stops waiting
 * for the work still running; the answers already decided still leave.
 */
export async function runServer(
  config: ServeConfig,
  io: ServeIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<void> {
  // A bad repository or config.json stops here, before anything listens (exit 2).
  const startup = await startupVersions(config);
  // Failures (a model that fails, an internal error) are rate-limited and written off the request's path.
  const failures = new FailureLog(io.stderr === process.stderr ? stderrLogSink() : io.stderr);
  // Lines about signals go to stdout until the output (plain lines or the dashboard) is up.
  let log = (line: string): void => void io.stdout.write(`${line}\n`);
  const { app, runtime, admin } = buildServer(config, {
    logError: (message, error, withStack) => failures.failure(message, error, withStack),
    logEvent: (line) => log(line),
  });
  const signals = io.shutdownSignal === undefined ? watchSignals((line) => log(line)) : undefined;
  // The dashboard's `q` counts as a signal: the first drains, a second stops waiting.
  const quit = new SecondChance();
  const shutdown = Promise.race([io.shutdownSignal ?? signals!.chance.first, quit.first]);
  const force = Promise.race([io.forceSignal ?? signals?.chance.second ?? new Promise<string>(() => {}), quit.second]);
  const connections = new DrainingConnections(app.server);
  const address = await listen(app, config.host, config.port, '--port');
  const adminAddress =
    admin === undefined
      ? undefined
      : await listen(admin, config.adminHost ?? config.host, config.adminPort, '--admin-port').catch(
          async (error: unknown) => {
            await app.close();
            throw error;
          },
        );
  const grpc =
    config.grpcPort === undefined
      ? undefined
      : await startGrpc(runtime, config, failures, (line) => void io.stderr.write(`${line}\n`)).catch(
          async (error: unknown) => {
            await Promise.all([app.close(), admin?.close()]);
            throw error;
          },
        );
  const source: ServeOutputSource = { readStats: () => runtime.statsAnswer(), onQuit: (key) => quit.fire(key) };
  const output: ServeOutput =
    io.startOutput === undefined
      ? { log: (line) => io.stdout.write(`${line}\n`), stop: () => {} }
      : await io.startOutput(source);
  log = (line) => output.log(line);
  try {
    const what = startup.versions.map((v) => (v.path === undefined ? 'the embedded model' : v.path)).join(', ');
    output.log(`batchline serve: starting on ${address}, loading ${what}`);
    for (const warning of startup.warnings) output.log(`batchline serve: warning: ${warning}`);
    if (config.adminToken !== undefined)
      output.log(`batchline serve: admin API on ${adminAddress ?? address}/admin/models`);
    if (grpc !== undefined)
      output.log(`batchline serve: gRPC on ${grpc.address} (inference.GRPCInferenceService, grpc.health.v1.Health)`);
    runtime.registry.defaultModel = startup.defaultModel;
    const loading = runtime.loadStartup(startup.versions);
    const first = await Promise.race([
      loading.then(() => ({ loaded: true as const })),
      shutdown.then((signal) => ({ signal })),
    ]).catch(async (error: unknown) => {
      grpc?.listener.forceClose();
      await Promise.all([app.close(), admin?.close()]);
      await runtime.closeModels();
      throw error;
    });
    if ('signal' in first) {
      // A thread inside onnxruntime cannot be stopped, and exiting under it aborts the process:
      // the drain answers what comes meanwhile (503) and the models close once their loads end.
      loading.catch(() => {});
      output.log(`batchline serve: ${first.signal} while loading: stopping once the loads in progress end`);
    } else {
      const versions = runtime.registry.all();
      const warnings = versionsWarningLines(versions);
      versions.forEach((version, i) => {
        // One line per version; the first says where the server listens (scripts look for it).
        output.log(
          `batchline serve: ${i === 0 ? `listening on ${address}${wildcardNote(app.server)} ` : ''}${versionLine(version)}`,
        );
        for (const warning of warnings.get(version) ?? []) output.log(warning);
      });
    }

    const loaded = !('signal' in first);
    // Traffic from now on: a model thread's start no longer stalls it (young-generation.ts).
    if (loaded) stopWaitingOnWorkerStarts();
    const signal = loaded ? await shutdown : first.signal;
    // While models load, /readyz already says 503: no load balancer is sending yet.
    if (config.drainDelayMs > 0 && loaded) {
      // Out of the load balancer's rotation first; a second signal skips the wait.
      runtime.withdrawReadiness();
      output.log(`batchline serve: ${signal}: not ready; serving for ${config.drainDelayMs} ms before draining`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, config.drainDelayMs))), force]);
      clearTimeout(timer);
    }
    const versions = runtime.registry.all();
    // Requests, as the line says, not the batcher's rows: a V1 request of 40 instances is one, and
    // the 503s below are counted by request, so rows made the refused ones vanish in the difference.
    const sum = (read: (requests: RequestsInFlight) => number): number =>
      versions.reduce((total, v) => total + read(v.requests), 0);
    output.log(
      `batchline serve: ${signal}: draining ${sum((r) => r.counts.queued)} queued and ${sum((r) => r.counts.running)} running requests (up to ${config.drainTimeoutMs} ms)`,
    );
    // Inference answered 503 from here on: those taken and answered at the deadline, and the new
    // requests refused (shutting_down), which the clients see and the last line must count too.
    // Read off the totals, which exist while models load too: `statsAnswer()` has none then, so
    // a 503 answered before a signal that came during the load was counted as a drain's.
    const fives = (): number => runtime.answersByStatus()['503'] ?? 0;
    const fivesBeforeDrain = fives();
    // The admin listener stops taking requests first; one in progress (a registration waiting for
    // its load) is answered by the drain (503), which therefore does not wait for it.
    const adminClosed = admin?.close();
    // Both inference listeners wait for the one drain, and close by the same deadline.
    const deadlineMs = performance.now() + config.drainTimeoutMs;
    await Promise.all([
      drainAndClose(app.server, connections, runtime, () => app.close(), config.drainTimeoutMs, force),
      grpc?.listener.closeAfterDrain(config.drainTimeoutMs, deadlineMs, force),
    ]);
    await adminClosed;
    await runtime.closeModels(); // after the loads in progress end
    const answeredAtShutdown = sum((r) => r.answeredAtShutdown);
    output.log(
      `batchline serve: stopped; ${okAnswers(runtime.answersByStatus())} ok, ${answeredAtShutdown} answered 503 at shutdown, ` +
        `${Math.max(0, fives() - fivesBeforeDrain - answeredAtShutdown)} refused while draining (503 shutting_down)`,
    );
  } finally {
    signals?.stop();
    failures.flush(); // the count of lines left out, if any
    output.stop();
  }
}

/** The server's 2xx inference answers since it started, by request (every transport's). */
function okAnswers(byStatus: Readonly<Record<string, number>>): number {
  let ok = 0;
  for (const [status, count] of Object.entries(byStatus))
    if (Number(status) >= 200 && Number(status) < 300) ok += count;
  return ok;
}
