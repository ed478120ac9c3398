/**
 * The built `batchline` command as a user runs it (`npm test` builds it first), and the one way
 * tests run it, or any node script, to its end: test files (eighteen, and two of node scripts) had each their own path to
 * bin/batchline.js and their own spawn, collect and exit-code code.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** bin/batchline.js of this checkout: what `npx batchline` runs. */
export const BATCHLINE_BIN = fileURLToPath(new URL('../bin/batchline.js', import.meta.url));

export interface NodeRun {
  /** The exit status, null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface NodeRunOptions {
  /** Laid over this process's environment; a variable set to undefined is left out. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * Runs `node …args` to its end (stdin /dev/null) and collects its output. Never rejects for an
 * exit status: the status is a result for a test to assert. Settles on 'close', once both
 * streams are read whole ('exit' can come before the last of stdout).
 */
export function runNode(args: string[], options: NodeRunOptions = {}): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawnNode(args, options);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs `batchline …args` to its end (runNode's rules). */
export function runBatchline(args: string[], options: NodeRunOptions = {}): Promise<NodeRun> {
  return runNode([BATCHLINE_BIN, ...args], options);
}

/** The run, when it exited 0 (or `alsoDone`, an exit that still did its work); otherwise throws with its stderr. */
export function succeeded(run: NodeRun, alsoDone?: number): NodeRun {
  if (run.code === 0 || (alsoDone !== undefined && run.code === alsoDone)) return run;
  throw new Error(`exited ${run.code ?? run.signal}:\n${run.stderr}`);
}

type Spawned = ChildProcessByStdio<null, Readable, Readable>;

/** Starts `node …args` (stdin /dev/null, stdout and stderr piped), for a test that signals it or reads it as it runs. */
export function spawnNode(args: string[], options: NodeRunOptions = {}): Spawned {
  return spawn(process.execPath, args, {
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Starts `batchline …args` (spawnNode's rules). */
export function spawnBatchline(args: string[], options: NodeRunOptions = {}): Spawned {
  return spawnNode([BATCHLINE_BIN, ...args], options);
}

/**
 * Runs `batchline …args` under CI (plain output, no dashboard) and returns its stdout; any other
 * exit than 0 throws, with its stderr. `failedRunExit`: an exit status that still wrote its page
 * (bench's 1 for a run with no 2xx answer), taken as done.
 */
export async function batchline(args: string[], failedRunExit?: number): Promise<string> {
  return succeeded(await runBatchline(args, { env: { CI: 'true' } }), failedRunExit).stdout;
}
