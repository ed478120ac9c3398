/**
 * Whether to draw a live dashboard: only on a terminal, never in CI, never with `--no-ui`.
 * Kept free of Ink so a command can decide before loading it (architecture.md rule 6).
 */
export function shouldUseDashboard(
  stdout: { isTTY?: boolean },
  env: NodeJS.ProcessEnv = process.env,
  noUiFlag = false,
): boolean {
  if (noUiFlag) return false;
  if (stdout.isTTY !== true) return false;
  if (isCi(env)) return false;
  if (env.TERM === 'dumb') return false;
  return true;
}

/** `CI` set to anything but an explicit false, as most CI services do. */
export function isCi(env: NodeJS.ProcessEnv): boolean {
  const value = env.CI;
  if (value === undefined || value === '') return false;
  return !/^(0|false|no|off)$/i.test(value);
}

/** Default frame period of the dashboards: 4 frames a second, whatever the request rate. */
export const DEFAULT_FRAME_MS = 250;

/**
 * Default frame period of the serve dashboard, which draws on the server's own main thread: 2
 * frames a second. An Ink frame of this size costs about 10 ms of CPU (measured in an 80x24
 * tmux pane, production React: ~40 ms/s at 4 Hz, ~25 ms/s at 2 Hz), and the dashboard must cost
 * the server under 5 % of its throughput.
 */
export const SERVE_FRAME_MS = 500;
