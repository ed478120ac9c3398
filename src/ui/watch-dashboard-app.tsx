import { render } from 'ink';
import { startStatsPoller } from '../stats-contract/stats-poller.js';
import { applyRead, INITIAL_WATCH_STATE, type WatchState } from '../watch/watch-state.js';
import { QuitKeys } from './components/quit-keys.js';
import { RenderGuard } from './components/render-guard.js';
import { TerminalFit } from './components/terminal-fit.js';
import { SelectionKeys } from './components/selection-keys.js';
import { ModelHistories, selectedRow, stepSelection } from '../stats-contract/model-histories.js';
import { servesModel } from '../stats-contract/server-stats.js';
import { StatsHistory } from '../stats-contract/stats-history.js';
import { DEFAULT_FRAME_MS } from './terminal.js';
import { WatchView } from './watch-view.js';

export interface WatchDashboardOptions {
  /** What the user typed, for the header. */
  target: string;
  statsUrl: string;
  intervalMs: number;
  timeoutMs: number;
  /** Headers each read sends (-H: a gateway's authorization). */
  headers?: Readonly<Record<string, string>>;
  /** Reads a server whose certificate does not verify (--insecure). */
  insecureTls?: boolean;
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  /** Frame period (ms); default 250. Frames and reads run on separate timers. */
  frameMs?: number;
  /** Ends the dashboard like `q` does (the command aborts it on SIGINT/SIGTERM). */
  signal?: AbortSignal;
  now?: () => number;
}

/**
 * Draws a remote server's dashboard until `q`, Ctrl-C or `signal`: reads its stats every
 * `intervalMs`, redraws every `frameMs` (so "last good read" keeps counting while the server is
 * away), and never fails because the server does.
 */
export function startWatchDashboard(options: WatchDashboardOptions): Promise<void> {
  const stdout = options.stdout ?? process.stdout;
  const now = options.now ?? (() => performance.now());
  const history = new StatsHistory();
  const histories = new ModelHistories();
  let state: WatchState = INITIAL_WATCH_STATE;
  let chosen: string | undefined;
  let frame = 0;

  return new Promise<void>((resolve) => {
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearInterval(frameTimer);
      options.signal?.removeEventListener('abort', finish);
      draw();
      instance.unmount();
      void poller.stop().then(resolve);
    };
    const element = () => {
      const last = state.lastGood?.stats;
      const rows = last === undefined || !servesModel(last) ? [] : histories.rows(last);
      chosen = selectedRow(rows, chosen, last?.defaultModel)?.key;
      const onStep = (step: number): void => {
        chosen = stepSelection(rows, chosen, step);
        draw();
      };
      return (
        <>
          <QuitKeys onQuit={finish} />
          <SelectionKeys onStep={onStep} />
          <TerminalFit columns={stdout.columns || 80} rows={stdout.rows || 24}>
            <RenderGuard frame={frame++}>
              <WatchView
                target={options.target}
                statsUrl={options.statsUrl}
                state={state}
                trends={history.trends()}
                nowMs={now()}
                intervalMs={options.intervalMs}
                columns={stdout.columns || 80}
                rows={stdout.rows || 24}
                models={{ rows, selected: chosen }}
              />
            </RenderGuard>
          </TerminalFit>
        </>
      );
    };
    const draw = (): void => instance.rerender(element());
    const instance = render(element(), {
      stdout,
      stdin: options.stdin ?? process.stdin,
      exitOnCtrlC: false,
      patchConsole: false,
    });
    const poller = startStatsPoller({
      statsUrl: options.statsUrl,
      intervalMs: options.intervalMs,
      timeoutMs: options.timeoutMs,
      ...(options.headers !== undefined ? { headers: options.headers } : {}),
      ...(options.insecureTls === true ? { insecureTls: true } : {}),
      now,
      onRead: (read) => {
        state = applyRead(state, read);
        // A server serving no model has no queue or batches to keep a history of.
        if (read.ok && servesModel(read.stats)) {
          history.push(read.stats, read.atMs);
          histories.push(read.stats, read.atMs);
        }
      },
    });
    const frameTimer = setInterval(draw, options.frameMs ?? DEFAULT_FRAME_MS);
    if (options.signal?.aborted) finish();
    else options.signal?.addEventListener('abort', finish, { once: true });
  });
}
