import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnBatchline } from '../batchline-cli.js';
import { PATIENCE_MS } from '../patience.js';
import { tempDir } from '../temp-dir.js';

const MODEL = new URL('../../dist/src/model/onnx-model.js', import.meta.url).href;

/**
 * The environment a server starts in, with its home and temporary directory made empty for the
 * test (a variable set to undefined is left out of a child's environment).
 */
function isolatedEnv(home: string, tmp: string, telemetry?: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: home,
    TMPDIR: tmp,
    HOST: '127.0.0.1',
    XDG_CACHE_HOME: undefined,
    ORT_DISABLE_TELEMETRY: telemetry,
  };
}

/** Every file under `dir`, as paths relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));

describe("onnxruntime's telemetry", () => {
  it('is off in a server: no device id or event cache in $HOME, no mat-debug log in $TMPDIR', async () => {
    const home = tempDir('batchline-telemetry-home-');
    const tmp = tempDir('batchline-telemetry-tmp-');
    const child = spawnBatchline(['serve', '--no-ui', '--port', '0'], { env: isolatedEnv(home, tmp) });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // Listening means the embedded model is loaded: onnxruntime has started and made its session.
    const port = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not listening: ${output}`)), PATIENCE_MS);
      child.stdout.on('data', () => {
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    const answer = await fetch(`http://127.0.0.1:${port}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
    });
    expect(answer.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // onnxruntime 1.30 with telemetry on: .cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}
    // in $HOME, and .ses and mat-debug-<pid>.log in $TMPDIR.
    expect(filesUnder(home)).toEqual([]);
    expect(filesUnder(tmp)).toEqual([]);
    expect(output).not.toContain('telemetry');
  });

  it("leaves the operator's own ORT_DISABLE_TELEMETRY as it is", async () => {
    const read = (telemetry?: string): Promise<string> =>
      new Promise((resolve, reject) =>
        execFile(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            `await import(${JSON.stringify(MODEL)}); console.log(process.env.ORT_DISABLE_TELEMETRY);`,
          ],
          { env: isolatedEnv(tempDir('batchline-telemetry-home-'), tempDir('batchline-telemetry-tmp-'), telemetry) },
          (error, stdout) => (error === null ? resolve(stdout.trim()) : reject(error)),
        ),
      );
    expect(await read()).toBe('1');
    expect(await read('0')).toBe('0');
  });
});
