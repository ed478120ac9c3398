import { Agent, request } from 'undici';
import { MAX_STATS_BYTES, readBoundedText } from '../stats-contract/stats-poller.js';
import type { BenchPlan } from './plan.js';

/**
 * How bench's own reads of the target (the probe that finds a body, the Server section's
 * statistics) go beside the run's requests: with the run's -H headers (a gateway's
 * authorization, a Host), but for its body's, its accept (they read JSON) and its framing, and past the
 * certificate --insecure takes. Without them a server behind TLS of its own certificate or a
 * gateway's authorization refused the reads, and bench went on as against a server it knew
 * nothing of (GETs of 404, no Server section) without a word.
 */
export interface SideReads {
  readonly headers: Record<string, string>;
  readonly insecureTls: boolean;
}

export const PLAIN_SIDE_READS: SideReads = { headers: {}, insecureTls: false };

/** Headers a GET of JSON leaves out: the body's, its accept, and those undici refuses in a request (a throw, and no read). */
const NOT_READS_OWN = new Set([
  'content-type',
  'content-length',
  'accept',
  'transfer-encoding',
  'keep-alive',
  'expect',
  'upgrade',
  'connection',
]);

export function sideReadsOf(plan: Pick<BenchPlan, 'headers' | 'insecureTls'>): SideReads {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(plan.headers)) if (!NOT_READS_OWN.has(name)) headers[name] = value;
  return { headers, insecureTls: plan.insecureTls === true };
}

/** A dispatcher of its own for one read with --insecure (close it after), else undefined: undici's own. */
export function sideDispatcher(reads: SideReads): Agent | undefined {
  return reads.insecureTls ? new Agent({ connect: { rejectUnauthorized: false } }) : undefined;
}

/**
 * A side read's GET of JSON, as the run's requests go: the answer's JSON when it is a 200, else
 * undefined; throws on a network error, a timeout or a body that is not JSON. Read to at most
 * MAX_STATS_BYTES within `timeoutMs` (and before `signal` aborts), on a connection of its own,
 * closed after it: a kept-alive one would count as a client a draining server waits for.
 */
export async function getSideJson(
  url: string | URL,
  reads: SideReads,
  timeoutMs: number,
  signal: AbortSignal = AbortSignal.timeout(timeoutMs),
): Promise<unknown> {
  const dispatcher = sideDispatcher(reads);
  try {
    const response = await request(url, {
      method: 'GET',
      headers: reads.headers,
      reset: true,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal,
      ...(dispatcher === undefined ? {} : { dispatcher }),
    });
    const text = await readBoundedText(response.body, MAX_STATS_BYTES);
    return response.statusCode === 200 ? JSON.parse(text) : undefined;
  } finally {
    void dispatcher?.close();
  }
}
