import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const bin = new URL('../../../bin/batchline.js', import.meta.url).pathname;

/**
 * Runs the built `batchline` as a user would, under CI (plain output, no dashboard), and returns
 * its stdout. `failedRunExit`: an exit status that still wrote its page (bench's 1 for a run with
 * no 2xx answer), taken as done.
 */
export async function batchline(args: string[], failedRunExit?: number): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [bin, ...args], {
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, CI: 'true' },
    });
    return stdout;
  } catch (error) {
    if (failedRunExit === undefined || (error as { code?: number }).code !== failedRunExit) throw error;
    return (error as { stdout?: string }).stdout ?? '';
  }
}
