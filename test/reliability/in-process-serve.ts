import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { runServer } from '../../src/serve/run-server.js';

export interface RunningServe {
  url: string;
  port: number;
  /** Everything serve wrote to stdout and stderr. */
  output(): string;
  /** The first call drains, a second stops waiting (as SIGTERM twice). */
  signal(name?: string): void;
  /** Resolves when runServer has returned. */
  done: Promise<void>;
}

/** `batchline serve` run by runServer in this process, with signals sent by the test. */
export async function runServeInProcess(flags: Record<string, unknown>): Promise<RunningServe> {
  let first!: (name: string) => void;
  let second!: (name: string) => void;
  const shutdownSignal = new Promise<string>((resolve) => (first = resolve));
  const forceSignal = new Promise<string>((resolve) => (second = resolve));
  let signals = 0;
  const chunks: string[] = [];
  let listening!: (url: string) => void;
  const listeningAt = new Promise<string>((resolve) => (listening = resolve));
  const sink = {
    write: (text: string) => {
      chunks.push(text);
      const url = /listening on (\S+)/.exec(text)?.[1];
      if (url !== undefined) listening(url);
      return true;
    },
  } as unknown as NodeJS.WritableStream;
  const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelLatencyMs: 0, ...flags }, {});
  const done = runServer(config, { stdout: sink, stderr: sink, shutdownSignal, forceSignal });
  const url = await Promise.race([listeningAt, done.then(() => undefined)]);
  if (url === undefined) throw new Error(`serve stopped before listening: ${chunks.join('')}`);
  return {
    url,
    port: Number(new URL(url).port),
    output: () => chunks.join(''),
    signal: (name = 'SIGTERM') => (++signals === 1 ? first(name) : second(name)),
    done,
  };
}
