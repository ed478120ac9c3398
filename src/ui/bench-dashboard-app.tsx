import { render, renderToString } from 'ink';
import { BenchView, type BenchViewProps } from './bench-view.js';
import { QuitKeys } from './components/quit-keys.js';
import { RenderGuard } from './components/render-guard.js';

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
  let last: BenchProgressView | undefined;
  const element = (progress: BenchProgressView) => (
    <>
      <QuitKeys onQuit={options.onStop} />
      <RenderGuard frame={frame++}>
        <BenchView {...progress} columns={stdout.columns || 80} />
      </RenderGuard>
    </>
  );
  return {
    update(progress: BenchProgressView): void {
      if (stopped) return;
      last = progress;
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
      instance?.unmount();
      // Ink draws a frame as tall as the terminal from a cleared screen, without the newline it
      // ends a shorter one with: the summary that follows would start on the frame's last line.
      if (last !== undefined && stdout.isTTY && stdout.rows > 0) {
        const columns = stdout.columns || 80;
        const lines = renderToString(<BenchView {...last} columns={columns} />, { columns }).split('\n').length;
        if (lines >= stdout.rows) stdout.write('\n');
      }
    },
  };
}
