import { render } from 'ink';
import { BenchView, type BenchViewProps } from './bench-view.js';
import { QuitKeys } from './components/quit-keys.js';
import { RenderGuard } from './components/render-guard.js';
import { TerminalFit } from './components/terminal-fit.js';

export type BenchProgressView = Omit<BenchViewProps, 'columns'>;

export interface BenchDashboardOptions {
  /** Called on `q` or Ctrl-C: bench stops sending and prints its summary. */
  onStop: () => void;
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
}

/**
 * The bench dashboard, driven by the generator's fixed-rate progress callback: each `update`
 * redraws once. `stop()` leaves the last frame on screen; bench then prints its plain summary.
 */
export function startBenchDashboard(options: BenchDashboardOptions): {
  update(progress: BenchProgressView): void;
  stop(): void;
} {
  const stdout = options.stdout ?? process.stdout;
  let instance: ReturnType<typeof render> | undefined;
  let stopped = false;
  let frame = 0;
  const element = (progress: BenchProgressView) => (
    <>
      <QuitKeys onQuit={options.onStop} />
      <TerminalFit columns={stdout.columns || 80} rows={stdout.rows || 24}>
        <RenderGuard frame={frame++}>
          <BenchView {...progress} columns={stdout.columns || 80} />
        </RenderGuard>
      </TerminalFit>
    </>
  );
  return {
    update(progress: BenchProgressView): void {
      if (stopped) return;
      if (instance === undefined) {
        instance = render(element(progress), {
          stdout,
          stdin: options.stdin ?? process.stdin,
          exitOnCtrlC: false,
          patchConsole: false,
        });
      } else {
        instance.rerender(element(progress));
      }
    },
    stop(): void {
      if (stopped) return;
      stopped = true;
      // The frame is shorter than the terminal (TerminalFit), so Ink ends it with a newline and
      // the summary that follows starts on a line of its own.
      instance?.unmount();
    },
  };
}
