import { request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { runServer } from '../../src/serve/run-server.js';
import { PATIENCE } from '../patience.js';

/** Runs serve on `host`, returns its listening line once printed, then stops it. */
async function listeningLine(host: string): Promise<{ line: string; status: number }> {
  let signal!: (name: string) => void;
  const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
  const output: string[] = [];
  const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
  const config = resolveOptions(SERVE_OPTIONS, { port: 0, host }, {});
  const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
  try {
    const line = await vi.waitFor(() => {
      const found = output
        .join('')
        .split('\n')
        .find((l) => l.includes('listening on'));
      expect(found).toBeDefined();
      return found!;
    }, PATIENCE);
    // The URL the line gives first is one a user can open from this machine (scripts read it).
    const url = /listening on (http:\/\/\S+)/.exec(line)![1]!;
    const { statusCode, body } = await request(`${url}/healthz`);
    await body.dump();
    return { line, status: statusCode };
  } finally {
    signal('SIGTERM');
    await running;
  }
}

describe("serve's listening line", () => {
  it('says a 0.0.0.0 listener takes every address, beside a URL to open', async () => {
    const { line, status } = await listeningLine('0.0.0.0');
    expect(line).toMatch(
      /listening on http:\/\/127\.0\.0\.1:\d+ \(bound to 0\.0\.0\.0, every IPv4 address of this machine\) model=/,
    );
    expect(status).toBe(200);
  });

  it('names :: by the IPv6 loopback, a URL browsers open, and says it takes every address', async () => {
    const { line, status } = await listeningLine('::');
    expect(line).toMatch(
      /listening on http:\/\/\[::1\]:\d+ \(bound to \[::\], every IPv6 and IPv4 address of this machine\) model=/,
    );
    expect(status).toBe(200);
  });

  it('gives a loopback host its URL alone', async () => {
    const { line, status } = await listeningLine('127.0.0.1');
    expect(line).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ model=/);
    expect(status).toBe(200);
  });
});
