/**
 * A failure count with no cause (`errors other: 3`) leaves the user guessing what to fix: each
 * kind's first cause shows in the text report and in --json's `error_causes`.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { errorCause } from '../../src/bench/error-kind.js';
import { benchMain } from '../../src/commands/bench-main.js';
import { validated } from './plan-helper.js';
import { TextSink } from './text-sink.js';

let server: Server | undefined;
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server that closes each connection as soon as a request arrives, answering nothing. */
async function hangingUpServer(): Promise<string> {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe("bench names each error kind's first cause", () => {
  it.each(['lean', 'undici'])('in the text report and in --json (%s client)', async (httpClient) => {
    const url = await hangingUpServer();
    const stdout = new TextSink();
    const stderr = new TextSink();
    // Not one answer: bench exits 1, and its message names the cause too.
    const exit = await benchMain(
      validated(url, { connections: '2', requests: '20', warmup: '0', method: 'GET', httpClient }),
      { json: '-', hdrLog: undefined, sweep: undefined, slo: 'p99<100ms', quiet: true },
      { stdout, stderr, env: {} },
    ).then(
      () => undefined,
      (error: Error) => error.message,
    );
    const report = JSON.parse(stdout.text) as { errors: Record<string, number>; error_causes: Record<string, string> };
    const counted = Object.keys(report.errors).filter((kind) => (report.errors[kind] ?? 0) > 0);
    expect(counted.length).toBeGreaterThan(0);
    // A cause for each kind counted, and none for a kind that did not occur.
    expect(Object.keys(report.error_causes)).toEqual(counted);
    for (const kind of counted) {
      const cause = report.error_causes[kind] as string;
      expect(cause).toMatch(/closed|ECONNRESET|socket|hang up/i);
      expect(stderr.text).toContain(`${kind}: ${report.errors[kind]} (first: ${cause})`);
      expect(exit).toContain(`${kind} ${report.errors[kind]} (first: ${cause})`);
    }
  });

  it('reads the cause down the chain of a wrapped error, with its code, on one line', () => {
    const socket = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const wrapped = Object.assign(new Error('fetch failed', { cause: socket }), { code: 'UND_ERR_SOCKET' });
    expect(errorCause(wrapped)).toBe('fetch failed (UND_ERR_SOCKET): read ECONNRESET');
    expect(errorCause(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(
      'socket hang up (ECONNRESET)',
    );
    expect(errorCause(new Error('line one\n  line two'))).toBe('line one line two');
    expect(errorCause(new Error('x'.repeat(500))).length).toBe(200);
    expect(errorCause('a string thrown')).toBe('a string thrown');
  });
});
