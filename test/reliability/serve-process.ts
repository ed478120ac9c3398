import type { ChildProcess } from 'node:child_process';
import { spawnBatchline } from '../batchline-cli.js';

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
  /** Resolves once its output so far satisfies `test` (true), or when it exits or `timeoutMs` passes (false). */
  until(test: (output: string) => boolean, timeoutMs: number): Promise<boolean>;
}

/**
 * `batchline serve --port 0 …args` in its own process; resolves once it listens (its models
 * loaded), or with `startedWhen: 'starting'` as soon as it says where it starts (still loading).
 */
export async function startServeProcess(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  startedWhen: 'listening' | 'starting' = 'listening',
): Promise<ServeProcess> {
  const child = spawnBatchline(['serve', '--port', '0', ...args], { env: { MODEL_LATENCY_MS: '0', ...env } });
  let output = '';
  const watchers = new Set<() => void>();
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, atMs: performance.now() })),
  );
  const url = await new Promise<string | undefined>((resolve) => {
    const pattern = startedWhen === 'listening' ? /listening on (http:\/\/\S+)/ : /starting on (http:\/\/[^\s,]+)/;
    const onData = (chunk: string): void => {
      output += chunk;
      const match = pattern.exec(output);
      if (match !== null) resolve(match[1]);
      for (const watcher of watchers) watcher();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
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
    until: (test, timeoutMs) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => finish(false), timeoutMs);
        const watcher = (): void => void (test(output) && finish(true));
        function finish(result: boolean): void {
          clearTimeout(timer);
          watchers.delete(watcher);
          resolve(result);
        }
        watchers.add(watcher);
        void exited.then(() => finish(test(output)));
        watcher();
      }),
  };
}
