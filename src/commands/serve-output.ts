import { clockTime, formatServerTotalsLine, formatStatsLine, formatVersionStatsLine } from '../report/stats-line.js';
import type { ServeOutput, ServeOutputSource } from '../serve/run-server.js';
import type { BatcherSnapshot } from '../core/batcher-stats.js';
import { type ServerStats, servesModel } from '../stats-contract/server-stats.js';

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
  const summary = new PlainSummary();
  const timer = setInterval(() => {
    const stats = readStats();
    // Sums up traffic: a server serving no model has none (its requests get 404).
    if (stats === undefined || !servesModel(stats)) return;
    for (const line of summary.lines(stats)) stdout.write(`batchline serve: ${clockTime(Date.now())} ${line}\n`);
  }, PLAIN_STATS_EVERY_MS);
  timer.unref();
  return {
    log: (line) => stdout.write(`${line}\n`),
    stop: () => clearInterval(timer),
  };
}

interface Counts {
  atMs: number;
  ok: number;
  batches: number;
  /** Requests that came: admitted, or refused for a full queue. */
  came: number;
}

function countsOf(snapshot: BatcherSnapshot): Counts {
  const counts = snapshot.counts;
  return {
    atMs: snapshot.atMs,
    ok: counts.outcomes.ok,
    batches: counts.batches,
    came: counts.admitted + counts.rejected.queue_full,
  };
}

function trendsOf(now: Counts, last: Counts): { throughputPerS: number; batchesPerS: number } {
  const seconds = (now.atMs - last.atMs) / 1000;
  return { throughputPerS: (now.ok - last.ok) / seconds, batchesPerS: (now.batches - last.batches) / seconds };
}

/**
 * The plain summary of one interval, when requests came in it: the server's line, and on a server
 * of several versions one line for each version that had requests. The server's line alone showed
 * the default model's (or the first version's) queue and latencies, and was written only when
 * that version had traffic: a repository whose requests all went to other models logged nothing.
 */
export class PlainSummary {
  private readonly last = new Map<string, Counts>();

  lines(stats: ServerStats): string[] {
    const versions = stats.models ?? [];
    if (versions.length <= 1) {
      const now = countsOf(stats.snapshot);
      const last = this.last.get('');
      this.last.set('', now);
      return last === undefined || now.came === last.came ? [] : [formatStatsLine(stats, trendsOf(now, last))];
    }
    const lines: string[] = [];
    const seen = new Map<string, Counts>();
    for (const version of versions) {
      const key = `${version.name}/${version.version}`;
      const now = countsOf(version.snapshot);
      const last = this.last.get(key);
      seen.set(key, now);
      if (last !== undefined && now.came !== last.came)
        lines.push(formatVersionStatsLine(version, trendsOf(now, last)));
    }
    // Versions removed since are forgotten; one registered since is summed up from its next interval.
    this.last.clear();
    for (const [key, counts] of seen) this.last.set(key, counts);
    return lines.length === 0 ? [] : [formatServerTotalsLine(stats), ...lines];
  }
}
