/**
 * bench:library's second shape, one call a turn: many callers, each making one call at a time and
 * its next one from a fresh macrotask (setImmediate) after the answer, as a server's handlers do
 * (each request's handler runs in its own I/O callback). Here no synchronous loop hands a batcher
 * its batch: it must gather the calls of many turns, which dataloader does only when given a
 * `batchScheduleFn`. Subjects, all with maxBatchSize 64 around `items.map((x) => x + 1)`:
 *
 * - `batch()` with `batchWindowMs` W: a batch runs when full, or when its oldest call has waited W.
 * - `dataloader window`: `batchScheduleFn: (cb) => setTimeout(cb, W)`, the same window as dataloader
 *   spells it. Its batch runs when the timer fires, full or not (a full batch only starts the next).
 * - `dataloader tick`: dataloader as configured by default, dispatching after the current tick,
 *   which between two setImmediate callbacks holds one call: batches of one.
 */
import DataLoader from 'dataloader';
import { batch } from '../../src/index.js';

export type Call = (item: number) => Promise<number>;

export interface TurnSubject {
  name: string;
  make(): { call: Call; close(): Promise<void> };
}

export interface TurnSlice {
  callsPerS: number;
  cpuUsPerCall: number;
}

const increment = async (items: readonly number[]): Promise<number[]> => items.map((x) => x + 1);

/** The three subjects, each batching up to `maxBatch` items over a window of `windowMs` around `fn`. */
export function turnSubjects(
  windowMs: number,
  maxBatch: number,
  callers: number,
  fn: (items: readonly number[]) => Promise<number[]> = increment,
): TurnSubject[] {
  const dataloader = (options: DataLoader.Options<number, number>) => () => {
    const loader = new DataLoader<number, number>(fn, { maxBatchSize: maxBatch, cache: false, ...options });
    return { call: (item: number) => loader.load(item), close: async () => {} };
  };
  return [
    {
      name: 'batch()',
      make: () => {
        const batched = batch((items: number[]) => fn(items), {
          maxBatchSize: maxBatch,
          batchWindowMs: windowMs,
          instances: 4,
          maxQueueSize: callers,
          requestTimeoutMs: 600_000,
        });
        return { call: (item) => batched(item), close: () => batched.close({ drainMs: 0 }) };
      },
    },
    { name: 'dataloader window', make: dataloader({ batchScheduleFn: (dispatch) => setTimeout(dispatch, windowMs) }) },
    { name: 'dataloader tick', make: dataloader({}) },
  ];
}

/**
 * `calls` calls through `call` by `callers` callers, each calling again from its own setImmediate
 * once answered. Throws unless every call answered its item + 1 (items 0 to calls − 1, each once).
 */
export async function callOneATurn(name: string, call: Call, calls: number, callers: number): Promise<TurnSlice> {
  let issued = 0;
  let answered = 0;
  let wrong = 0;
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const caller = async (): Promise<void> => {
    for (;;) {
      await nextTurn();
      if (issued === calls) return;
      const item = issued++;
      if ((await call(item)) !== item + 1) wrong++;
      answered++;
    }
  };
  const started = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: Math.min(callers, calls) }, caller));
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  if (wrong > 0 || answered !== calls)
    throw new Error(`${name}: ${answered} of ${calls} calls answered, ${wrong} of them not item + 1`);
  return { callsPerS: calls / seconds, cpuUsPerCall: (used.user + used.system) / calls };
}

/** A warm-up slice each, then `pairs` rounds in which the subjects take turns, the order flipping each round. */
export async function turnsComparison(
  subjects: readonly TurnSubject[],
  calls: number,
  pairs: number,
  callers: number,
  onPair: (pair: number, results: ReadonlyMap<string, TurnSlice>) => void,
): Promise<Map<string, TurnSlice[]>> {
  const slice = async (subject: TurnSubject): Promise<TurnSlice> => {
    const { call, close } = subject.make();
    const result = await callOneATurn(subject.name, call, calls, callers);
    await close();
    return result;
  };
  for (const subject of subjects) await slice(subject);
  const slices = new Map<string, TurnSlice[]>(subjects.map((s) => [s.name, []]));
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? subjects : [...subjects].reverse();
    const results = new Map<string, TurnSlice>();
    for (const subject of order) results.set(subject.name, await slice(subject));
    for (const [name, result] of results) slices.get(name)!.push(result);
    onPair(pair, results);
  }
  return slices;
}
