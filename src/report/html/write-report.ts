import { writeFile } from 'node:fs/promises';
import { BatchlineError } from '../../errors.js';

/**
 * Writes a report page and says so on `log` (stderr by default, so that `--json -` keeps stdout);
 * a path that cannot be written is the option's fault, named as such.
 */
export async function writeReportFile(
  path: string,
  html: string,
  log: { write(text: string): unknown } = process.stderr,
): Promise<void> {
  try {
    await writeFile(path, html);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `--html: cannot write '${path}': ${(error as Error).message}`);
  }
  log.write(`wrote ${path} (${Math.ceil(Buffer.byteLength(html) / 1024)} KB)\n`);
}
