import { connect } from 'node:net';
import { request } from 'undici';
import { MAX_STATS_BYTES, readBoundedText } from '../stats-contract/stats-poller.js';

/**
 * `batchline serve &` and then `batchline bench …/v1/infer` on the next line (scaling.md's check
 * of a replica) start bench before the server listens: its one question to the target, which
 * model the URL reaches, was refused, so it sent GET without a body and the whole run was 404s.
 * bench waits, this long at most, for such a target while it refuses connections.
 */
export const LISTENER_WAIT_MS = 10_000;
/** Between two attempts to connect. */
const RETRY_MS = 100;

/** The outcome of one TCP connection to the URL's host and port: refused, or anything else. */
function connects(url: URL, timeoutMs: number): Promise<boolean | 'refused'> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (outcome: boolean | 'refused') => {
      socket.destroy();
      resolve(outcome);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code === 'ECONNREFUSED' ? 'refused' : false));
  });
}

/**
 * Whether something listens at the URL's host and port, waiting up to `limitMs` while connections
 * are refused (`onWait` is called once, when the first is). Any other failure (a timeout, an
 * unknown host) is left to the run, which reports it: only a refusal means "not started yet".
 */
export async function listening(url: URL, limitMs: number, onWait: () => void): Promise<boolean> {
  const deadline = performance.now() + limitMs;
  let outcome = await connects(url, limitMs);
  if (outcome !== 'refused') return true;
  onWait();
  while (outcome === 'refused' && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    outcome = await connects(url, Math.max(1, deadline - performance.now()));
  }
  return outcome !== 'refused';
}

/**
 * `attempt` again every RETRY_MS while `again` says its outcome is "not yet", until `deadlineMs`
 * (`performance.now()`); the last outcome. Once with no deadline.
 */
export async function retriedWhile<T>(
  attempt: () => Promise<T>,
  again: (outcome: T) => boolean,
  deadlineMs: number | undefined,
): Promise<T> {
  let outcome = await attempt();
  while (again(outcome) && deadlineMs !== undefined && performance.now() < deadlineMs) {
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    outcome = await attempt();
  }
  return outcome;
}

/**
 * A batchline server that has just begun to listen loads its models after: meanwhile its
 * `/v1/stats` answers 503 `not_ready`, and bench's one question (which model the URL reaches)
 * learns nothing, so the run was one of GET without a body (404s) all the same. Waits while it
 * says so, until `deadlineMs` (`performance.now()`); any other answer, or none, ends the wait.
 */
export async function untilLoaded(url: URL, deadlineMs: number): Promise<void> {
  await retriedWhile(
    () => statsSayLoading(url, deadlineMs),
    (loading) => loading,
    deadlineMs,
  );
}

/** Whether the server's `/v1/stats` answers 503 `not_ready` (false for any other answer, or none). */
async function statsSayLoading(url: URL, deadlineMs: number): Promise<boolean> {
  try {
    const timeoutMs = Math.max(1, deadlineMs - performance.now());
    const response = await request(new URL('/v1/stats', url), { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const text = await readBoundedText(response.body, MAX_STATS_BYTES);
    return response.statusCode === 503 && /"code"\s*:\s*"not_ready"/.test(text);
  } catch {
    return false;
  }
}
