import { Box, render, Text } from 'ink';
import { servesModel, type StatsAnswer } from '../stats-contract/server-stats.js';
import { HeaderLine } from './components/header-line.js';
import { KeyHints } from './components/key-hints.js';
import { QuitKeys } from './components/quit-keys.js';
import { RenderGuard } from './components/render-guard.js';
import { TerminalFit } from './components/terminal-fit.js';
import { SelectionKeys } from './components/selection-keys.js';
import { ModelHistories, selectedRow, stepSelection, type VersionRow } from '../stats-contract/model-histories.js';
import { NoModelView } from './no-model-view.js';
import { ServeView } from './serve-view.js';
import { StatsHistory, type StatsTrends } from '../stats-contract/stats-history.js';
import { SERVE_FRAME_MS } from './terminal.js';

export interface ServeDashboardOptions {
  /**
   * Reads the server's stats; called once per frame, never per request. Undefined (the model
   * is still loading) draws a "starting" frame, so the dashboard may start before the model.
   */
  readStats: () => StatsAnswer | undefined;
  /** Called on `q` or Ctrl-C (each press); the caller starts the graceful shutdown. */
  /** The key that asked: `q` or `Ctrl-C` (serve's log names it as it names a signal). */
  onQuit: (key: string) => void;
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
  /** Frame period (ms); default 500 (2 Hz), see SERVE_FRAME_MS for why. */
  frameMs?: number;
  /** Monotonic time in ms for the rate and history bookkeeping; default performance.now. */
  now?: () => number;
}

const QUIT_HINTS = [['q', 'stop (drains first)']] as const;
/** The hint for choosing among model versions. */
const MODEL_HINT = ['Tab ←/→', 'model'] as const;

interface ServeDashboardAppProps {
  stats: StatsAnswer | undefined;
  trends: StatsTrends;
  columns: number;
  rows: number;
  /** The key that asked: `q` or `Ctrl-C` (serve's log names it as it names a signal). */
  onQuit: (key: string) => void;
  /** Several model versions: their rows and the one the panels show (Tab, ←, → move it). */
  models?: { rows: readonly VersionRow[]; selected: string | undefined };
  onStep?: (step: number) => void;
  /** Counts frames, so a frame that failed to draw is retried on the next. */
  frame?: number;
}

export function ServeDashboardApp({
  stats,
  trends,
  columns,
  rows,
  onQuit,
  models,
  onStep,
  frame = 0,
}: ServeDashboardAppProps) {
  const draining = stats?.state === 'draining' || stats?.state === 'stopped';
  const several = models !== undefined && models.rows.length > 1;
  const shown = several ? models.rows.find((row) => row.key === models.selected) : undefined;
  const hints = draining ? undefined : several ? [MODEL_HINT, ...QUIT_HINTS] : QUIT_HINTS;
  return (
    <>
      <QuitKeys onQuit={onQuit} />
      {onStep !== undefined && <SelectionKeys onStep={onStep} />}
      <TerminalFit columns={columns} rows={rows}>
        <RenderGuard frame={frame}>
          {stats === undefined ? (
            <Box flexDirection="column">
              <HeaderLine title="batchline serve" state="starting" stateColor="yellow" />
              <Text dimColor>loading the model; /readyz answers 503 until it is ready</Text>
              <KeyHints hints={QUIT_HINTS} />
            </Box>
          ) : !servesModel(stats) ? (
            <NoModelView
              stats={stats}
              columns={columns}
              title="batchline serve"
              hints={draining ? undefined : QUIT_HINTS}
            />
          ) : (
            <ServeView
              stats={shown?.stats ?? stats}
              trends={shown?.trends ?? trends}
              columns={columns}
              rows={rows}
              title="batchline serve"
              hints={hints}
              {...(several ? { models } : {})}
            />
          )}
        </RenderGuard>
      </TerminalFit>
    </>
  );
}

/**
 * Draws the serve dashboard until `stop()`: every `frameMs` it reads the stats once, adds them
 * to a 60 s history and redraws. The request path never touches it (architecture.md rule 9).
 */
export function startServeDashboard(options: ServeDashboardOptions): { stop(): void } {
  const stdout = options.stdout ?? process.stdout;
  const frameMs = options.frameMs ?? SERVE_FRAME_MS;
  const now = options.now ?? (() => performance.now());
  const history = new StatsHistory();
  const histories = new ModelHistories();
  let last: StatsAnswer | undefined;
  let chosen: string | undefined;
  let frame = 0;

  const element = () => {
    const rows = last === undefined || !servesModel(last) ? [] : histories.rows(last);
    chosen = selectedRow(rows, chosen, last?.defaultModel)?.key;
    const onStep = (step: number): void => {
      chosen = stepSelection(rows, chosen, step);
      instance.rerender(element());
    };
    return (
      <ServeDashboardApp
        stats={last}
        trends={history.trends()}
        columns={stdout.columns || 80}
        rows={stdout.rows || 24}
        onQuit={options.onQuit}
        models={{ rows, selected: chosen }}
        onStep={onStep}
        frame={frame++}
      />
    );
  };
  const read = (): void => {
    try {
      const stats = options.readStats();
      if (stats === undefined) return;
      last = stats;
      if (!servesModel(stats)) return; // no queue or batches to keep a history of
      const atMs = now();
      history.push(stats, atMs);
      histories.push(stats, atMs);
    } catch {
      // A failed read keeps the last frame; the dashboard must never take the server down.
    }
  };

  read();
  const instance = render(element(), {
    stdout,
    stdin: options.stdin ?? process.stdin,
    exitOnCtrlC: false, // Ctrl-C means "drain", which the server decides, not "exit now"
    patchConsole: false,
  });
  const timer = setInterval(() => {
    read();
    instance.rerender(element());
  }, frameMs);
  timer.unref?.();

  let stopped = false;
  return {
    stop(): void {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      read();
      instance.rerender(element()); // the last frame (say, "stopped") stays on screen
      instance.unmount();
    },
  };
}
