/**
 * What the benches that set `batchline bench` beside other load generators (bench:loadgen,
 * bench:accuracy) share: their settings from the environment, and a run of batchline bench in a
 * process of its own, as a user runs it, read from its --json report.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const execFileAsync = promisify(execFile);
const BIN = fileURLToPath(new URL('../../../bin/batchline.js', import.meta.url));

/** The environment's `name` when it is a positive number, else `fallback`. */
export function positiveEnv(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/**
 * `batchline bench URL ARGS… --json - --quiet`: its report. Throws when a request failed: a run
 * whose requests failed is not a figure to set beside another tool's.
 */
export async function batchlineBenchReport<Report extends { requests: { errors: number } }>(
  url: string,
  args: readonly string[],
): Promise<Report> {
  const { stdout } = await execFileAsync(process.execPath, [BIN, 'bench', url, ...args, '--json', '-', '--quiet'], {
    maxBuffer: 1 << 24,
  });
  const report = JSON.parse(stdout) as Report;
  if (report.requests.errors > 0) throw new Error(`batchline bench saw ${report.requests.errors} errors`);
  return report;
}
