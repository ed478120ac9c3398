import { spawn } from 'node:child_process';
import { join } from 'node:path';

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

/** Starts `node <bin> serve … --port 0` on 127.0.0.1, as a container or a pod would start it. */
export async function spawnServe(args: string[], bin = join(ROOT, 'bin', 'batchline.js')): Promise<ServeProcess> {
  const child = spawn(process.execPath, [bin, ...args, '--port', '0'], { env: { ...process.env, HOST: '127.0.0.1' } });
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
