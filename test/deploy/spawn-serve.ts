import { join } from 'node:path';
import { spawnBatchline } from '../batchline-cli.js';

export const ROOT = join(import.meta.dirname, '..', '..');

export interface ServeProcess {
  /** http://127.0.0.1:PORT, once it listens. */
  url: string;
  port: string;
  /** Everything it printed so far. */
  output(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `batchline serve … --port 0` on 127.0.0.1, as a container or a pod would start it. */
export async function spawnServe(args: string[]): Promise<ServeProcess> {
  const child = spawnBatchline([...args, '--port', '0'], { env: { HOST: '127.0.0.1' } });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const port = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', () => {
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (match?.[1]) resolve(match[1]);
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code} before listening: ${output}`)));
    });
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      output: () => output,
      stop: async (signal = 'SIGTERM') => {
        child.kill(signal);
        return exited;
      },
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}
