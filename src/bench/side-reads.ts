import { Agent } from 'undici';
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
