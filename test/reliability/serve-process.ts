import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../bin/batchline.js', import.meta.url));

export interface ServeProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves when the process has exited: its code, its signal, and ms from `since` (default: start). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
  /** Kills it (SIGKILL) if it still runs: for test clean-up. */
  kill(): void;
}

/** `batchline serve --port 0 …args` in its own process; resolves once it listens. */
export async function startServeProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    env: { ...process.env, MODEL_LATENCY_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, atMs: performance.now() })),
  );
  const url = await new Promise<string | undefined>((resolve) => {
    const onData = (chunk: string): void => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match !== null) resolve(match[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: string) => (output += chunk));
    void exited.then(() => resolve(undefined));
  });
  if (url === undefined) throw new Error(`serve exited before listening:\n${output}`);
  return {
    url,
    port: Number(new URL(url).port),
    child,
    output: () => output,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
