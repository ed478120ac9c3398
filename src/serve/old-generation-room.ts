import { setFlagsFromString } from 'node:v8';
import { givenNodeFlag } from './young-generation.js';

/** The V8 flag that fixes how far the old generation's limit is set above what a full collection kept. */
const GROWING_FLAG = '--heap-growing-percent';

/** The limit set after each full collection: three times the old generation it kept (V8 picks 1.1 to 4). */
export const HEAP_GROWING_PERCENT = 200;

/**
 * Sets the old generation's limit after each full (mark-compact) collection at three times what
 * the collection kept, instead of V8's own factor, which under load came out at 1.2–1.5: a
 * 27–28 MB limit over a 15.5 MB old generation. `serve` calls it with `keepYoungGenerationSmall`,
 * when its models run off the main thread. Returns whether it acts: not when the operator passed
 * the flag (on the command line or in NODE_OPTIONS).
 *
 * Why: V8 (Node 20's 11.3) counts external memory allocated since the last full collection
 * (ArrayBuffers: here Node's HTTP parser copies each body chunk into a Buffer of its own, 110 KB a
 * classifier image) as if it were old generation, and starts a marking when that sum comes within
 * the young generation's size of the limit. It checks right after a scavenge, before the
 * scavenge's dead ArrayBuffers are swept, so a young-generation cycle's bodies (about 200
 * requests, 22 MB at a 4 MB semispace) all count: with 12 MB of room, nearly every scavenge under
 * load started a mark-compact (4–6 a thousand requests on the classifier, each a 2–13 ms pause and
 * as much in incremental steps). With 3× the room (about 31 MB over 15.5 MB) a cycle's bodies fit.
 * The cost is memory: the old generation may grow to about three times its live size before a
 * full collection (45–55 MB here instead of 27).
 */
export function keepOldGenerationRoom(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  if (givenNodeFlag(execArgv, nodeOptions, [GROWING_FLAG])) return false;
  setFlagsFromString(`${GROWING_FLAG}=${HEAP_GROWING_PERCENT}`);
  return true;
}
