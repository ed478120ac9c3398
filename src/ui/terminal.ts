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

/**
 * `CI` or `CONTINUOUS_INTEGRATION` set (even empty) to anything but `0` or `false`: the rule of
 * Ink's is-in-ci, under which Ink draws only the last frame. A dashboard chosen where Ink says CI
 * (`CI=`, `CI=no`) stayed a blank screen until the command ended.
 */
export function isCi(env: NodeJS.ProcessEnv): boolean {
  const set = (value: string | undefined): boolean => value !== undefined && value !== '0' && value !== 'false';
  return set(env.CI) || set(env.CONTINUOUS_INTEGRATION);
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
