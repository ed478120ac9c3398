import { clockTime, formatServerTotalsLine, formatStatsLine, formatVersionStatsLine } from '../report/stats-line.js';
import { formatMs } from '../report/format.js';
import { ModelHistories } from '../stats-contract/model-histories.js';
import { type StatsAnswer, servesModel } from '../stats-contract/server-stats.js';
import { StatsHistory } from '../stats-contract/stats-history.js';
import { startStatsPoller } from '../stats-contract/stats-poller.js';
import { applyRead, INITIAL_WATCH_STATE, type WatchState } from './watch-state.js';

export interface WatchPlainOptions {
  statsUrl: string;
  intervalMs: number;
  timeoutMs: number;
  /** Headers each read sends (-H: a gateway's authorization). */
  headers?: Readonly<Record<string, string>>;
  /** Reads a server whose certificate does not verify (--insecure). */
  insecureTls?: boolean;
  /** Where lines go; default process.stdout. */
  out?: { write(text: string): unknown };
  /** Ends the watch (the command aborts it on SIGINT/SIGTERM). */
  signal: AbortSignal;
  now?: () => number;
  /** Wall-clock ms for the time prefix of each line; default Date.now. */
  wallClock?: () => number;
}

/**
 * `watch` without a terminal: the plain lines of each good read (`readLines`), one line when the
 * server becomes unreachable and one when it is back; no colour and no control sequences.
 */
export function runWatchPlain(options: WatchPlainOptions): Promise<void> {
  const out = options.out ?? process.stdout;
  const wallClock = options.wallClock ?? Date.now;
  const history = new StatsHistory();
  const versionHistories = new ModelHistories();
  let state: WatchState = INITIAL_WATCH_STATE;
  const line = (text: string): void => {
    out.write(`${clockTime(wallClock())} ${text}\n`);
  };
  line(`watching ${options.statsUrl} every ${formatMs(options.intervalMs)}`);

  return new Promise<void>((resolve) => {
    const poller = startStatsPoller({
      statsUrl: options.statsUrl,
      intervalMs: options.intervalMs,
      timeoutMs: options.timeoutMs,
      ...(options.headers !== undefined ? { headers: options.headers } : {}),
      ...(options.insecureTls === true ? { insecureTls: true } : {}),
      ...(options.now !== undefined ? { now: options.now } : {}),
      onRead: (read) => {
        const before = state;
        state = applyRead(state, read);
        if (read.ok) {
          if (before.failure !== undefined)
            line(`reachable again after ${formatMs(read.atMs - before.failure.sinceMs)}`);
          if (servesModel(read.stats)) {
            history.push(read.stats, read.atMs);
            versionHistories.push(read.stats, read.atMs);
          }
          for (const text of readLines(read.stats, history, versionHistories)) line(text);
        } else if (before.failure === undefined) {
          line(`unreachable (${read.error}), retrying every ${formatMs(options.intervalMs)}`);
        } else if (before.failure.error !== read.error) {
          line(`still unreachable (${read.error})`);
        }
      },
    });
    const stop = (): void => void poller.stop().then(resolve);
    if (options.signal.aborted) stop();
    else options.signal.addEventListener('abort', stop, { once: true });
  });
}

/**
 * What one read prints, in the words of serve's `--no-ui` summary: a server of one version (or
 * none) one line; a server of several its line (state, uptime, answers of all versions) and one
 * line for each version it reports, with that version's rates. One line showed only the default
 * model's (or the first version's) queue and latencies.
 */
function readLines(stats: StatsAnswer, history: StatsHistory, versionHistories: ModelHistories): string[] {
  if (!servesModel(stats) || (stats.models?.length ?? 0) <= 1) return [formatStatsLine(stats, history.trends())];
  const rows = versionHistories.rows(stats);
  const entries = stats.models ?? [];
  return [
    formatServerTotalsLine(stats),
    ...entries.map((entry, index) => formatVersionStatsLine(entry, rows[index]?.trends)),
  ];
}
