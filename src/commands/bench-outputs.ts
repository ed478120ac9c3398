import { writeFile } from 'node:fs/promises';
import type { Objective } from '../options/objective.js';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';

/** What bench writes and where (text, --json, --hdr-log, --csv, --html), its sweeps and how it judges them. */
export interface BenchOutputs {
  json: string | undefined;
  hdrLog: string | undefined;
  sweep: string | undefined;
  /** --sweep-connections: closed-loop steps, one per count of connections. */
  sweepConnections?: string | undefined;
  slo: string;
  /** --stop-on-miss: a sweep ends after its first step that does not meet the objective (perf_analyzer's --latency-threshold). */
  stopOnMiss?: boolean;
  /** --threshold, parsed: judged on a single run; one failing exits 99, as in k6. */
  thresholds?: readonly Objective[];
  quiet: boolean;
  /** --no-ui: the plain progress line even on a terminal. */
  noUi?: boolean;
  /** --html: a self-contained report page. */
  html?: string | undefined;
  /** The command as typed, for the page's footer. */
  commandLine?: string;
  /** --csv: perf_analyzer's -f file, a row per run or sweep step. */
  csv?: string | undefined;
}

/**
 * '-' is stdout, which holds one document: '--hdr-log -' wrote the log after the text summary,
 * '--json - --hdr-log -' after the JSON (stdout no longer JSON), '--html -' a file named '-', and
 * a sweep's '--hdr-log -' (one log per step) files named '--100rps.
 */
export function checkStdoutOutputs(outputs: BenchOutputs): void {
  if (outputs.json === '-' && outputs.hdrLog === '-')
    throw new BatchlineError('INVALID_OPTION', '--json - and --hdr-log -: only one of them can go to stdout');
  if (outputs.csv === '-') invalidOptionValue('--csv', '-', "a file's path (as perf_analyzer's -f)");
  if (outputs.html === '-') invalidOptionValue('--html', '-', "a file's path (the page is not written to stdout)");
  if (outputs.hdrLog === '-' && outputs.sweep !== undefined)
    invalidOptionValue(
      '--hdr-log',
      '-',
      "a file's path with --sweep (each step writes a log of its own, the rate in its name)",
    );
  if (outputs.hdrLog === '-' && outputs.sweepConnections !== undefined)
    invalidOptionValue(
      '--hdr-log',
      '-',
      "a file's path with --sweep-connections (each step writes a log of its own, its connections in its name)",
    );
}

/**
 * With a sweep, one HdrHistogram log per step, the step inserted before the extension:
 * `run.hlog` becomes `run-500rps.hlog` (--sweep) or `run-c4.hlog` (--sweep-connections).
 */
export function stepLogPath(path: string, step: string): string {
  const dot = path.lastIndexOf('.');
  const slash = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  const stem = dot > slash + 1 ? path.slice(0, dot) : path;
  const ext = dot > slash + 1 ? path.slice(dot) : '';
  return `${stem}-${step}${ext}`;
}

/** Writes `content` to the file `target`, or to stdout for '-'. */
export async function writeOutput(target: string, content: string, stdout: NodeJS.WritableStream): Promise<void> {
  if (target === '-') {
    stdout.write(content);
    return;
  }
  await writeFile(target, content);
}
