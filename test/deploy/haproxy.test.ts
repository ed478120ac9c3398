/**
 * deploy/haproxy/haproxy.cfg: what makes it fit batching servers, checked against serve's own
 * options, and the file checked by haproxy itself where it is installed (npm run test:scale runs
 * it for real).
 */
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { ROOT } from './spawn-serve.js';

const FILE = join(ROOT, 'deploy', 'haproxy', 'haproxy.cfg');
const lines = readFileSync(FILE, 'utf8')
  .split('\n')
  .map((line) => line.replace(/#.*/, '').trim())
  .filter((line) => line !== '');
const directive = (name: string): string[] => lines.filter((line) => line.startsWith(`${name} `) || line === name);
const ms = (value: string): number => {
  const match = /^(\d+)(ms|s|m)?$/.exec(value);
  if (match === null) throw new Error(`not a duration: ${value}`);
  return Number(match[1]) * ({ ms: 1, s: 1000, m: 60_000 }[match[2] ?? 'ms'] ?? 1);
};
const haproxy = spawnSync('haproxy', ['-v']).error === undefined;

describe('deploy/haproxy/haproxy.cfg', () => {
  it('sends each request to the replica with the fewest outstanding, and asks /readyz', () => {
    expect(directive('balance')).toEqual(['balance leastconn']);
    expect(directive('http-check send')).toEqual(['http-check send meth GET uri /readyz']);
    expect(directive('http-check expect')).toEqual(['http-check expect status 200']);
    expect(directive('server').length).toBe(3);
  });

  it('retries only requests that never reached a replica, on another one', () => {
    expect(directive('retry-on')).toEqual(['retry-on conn-failure']);
    expect(directive('option redispatch').length).toBe(1);
    // A new connection per request, so a dead replica is a refused connection, not a dead socket.
    expect(directive('option http-server-close').length).toBe(1);
  });

  it("waits for a replica longer than its longest deadline, and sees it leave within serve's drain delay", () => {
    const timeout = (name: string): number => ms(directive(`timeout ${name}`)[0]?.split(/\s+/)[2] ?? '');
    const maxDeadlineMs = SERVE_OPTIONS.maxRequestTimeoutMs.default;
    expect(timeout('server')).toBeGreaterThan(maxDeadlineMs);
    expect(timeout('server')).toBeGreaterThan(SERVE_OPTIONS.requestTimeoutMs.default);
    const server = directive('default-server')[0] ?? '';
    const setting = (name: string): number => ms(new RegExp(`\\b${name} (\\S+)`).exec(server)?.[1] ?? '');
    const fall = Number(/\bfall (\d+)/.exec(server)?.[1]);
    // The test's --drain-delay-ms (and the one docs/scaling.md advises) outlasts the checks that see /readyz fail.
    const drainDelayMs = Number(
      /const DRAIN_DELAY_MS = (\d+)/.exec(readFileSync(join(ROOT, 'scripts', 'test-scale.ts'), 'utf8'))?.[1],
    );
    expect(fall * setting('inter') + timeout('check')).toBeLessThan(drainDelayMs);
  });

  it.skipIf(!haproxy)('is valid to haproxy -c (skipped where haproxy is not installed)', async () => {
    const { stdout } = await promisify(execFile)('haproxy', ['-c', '-f', FILE], {
      env: {
        ...process.env,
        FRONTEND: '127.0.0.1:8080',
        REPLICA_1: '127.0.0.1:8081',
        REPLICA_2: '127.0.0.1:8082',
        REPLICA_3: '127.0.0.1:8083',
      },
    });
    expect(stdout).toMatch(/Configuration file is valid/);
  });
});
