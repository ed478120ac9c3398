import { clockTime, formatStatsLine } from '../report/stats-line.js';
import type { ServeOutput, ServeOutputSource } from '../serve/run-server.js';
import { servesModel } from '../stats-contract/server-stats.js';

/** How often the plain output sums up the server when something happened (ms). */
const PLAIN_STATS_EVERY_MS = 10_000;

/**
 * What a person sees of a running server: the Ink dashboard on a terminal (lifecycle lines are
 * held behind it and written after its last frame), or plain lines (start-up, a summary every
 * 10 s while there is traffic, shutdown) in pipes, logs and CI.
 */
export async function startServeOutput(
  options: ServeOutputSource & { dashboard: boolean; stdout: NodeJS.WritableStream },
): Promise<ServeOutput> {
  const { stdout, readStats } = options;
  if (options.dashboard) {
    const { startServeDashboard } = await import('../ui/serve-dashboard.js');
    const held: string[] = [];
    const dashboard = startServeDashboard({ readStats, onQuit: options.onQuit, stdout: stdout as NodeJS.WriteStream });
    return {
      log: (line) => held.push(line),
      stop: () => {
        dashboard.stop();
        for (const line of held) stdout.write(`${line}\n`); // the record of what happened, after the last frame
      },
    };
  }
  let last: { atMs: number; ok: number; batches: number; admitted: number } | undefined;
  const timer = setInterval(() => {
    const stats = readStats();
    // Sums up traffic: a server serving no model has none (its requests get 404).
    if (stats === undefined || !servesModel(stats)) return;
    const counts = stats.snapshot.counts;
    const now = {
      atMs: stats.snapshot.atMs,
      ok: counts.outcomes.ok,
      batches: counts.batches,
      admitted: counts.admitted + counts.rejected.queue_full,
    };
    if (last !== undefined && now.admitted !== last.admitted) {
      const seconds = (now.atMs - last.atMs) / 1000;
      const trends = {
        throughputPerS: (now.ok - last.ok) / seconds,
        batchesPerS: (now.batches - last.batches) / seconds,
      };
      stdout.write(`batchline serve: ${clockTime(Date.now())} ${formatStatsLine(stats, trends)}\n`);
    }
    last = now;
  }, PLAIN_STATS_EVERY_MS);
  timer.unref();
  return {
    log: (line) => stdout.write(`${line}\n`),
    stop: () => clearInterval(timer),
  };
}
