/**
 * The message for a batch function (the library's `fn`, a code model's `execute`) that did not
 * return one result per item, naming what it returned as a reader says it: "1 result",
 * "undefined", "an Object", "a Map".
 */
export function notOnePerItem(who: string, returned: unknown, size: number): string {
  return `${who} returned ${describeReturned(returned)} for a batch of ${count(size, 'item')}; it must return an array with one result (or Error) per item, in order${remedy(returned)}`;
}

function describeReturned(returned: unknown): string {
  if (Array.isArray(returned)) return count(returned.length, 'result');
  if (returned === null || returned === undefined) return String(returned);
  // An async generator's constructor has no name: its tag says what it is (AsyncGenerator).
  const kind =
    typeof returned === 'object'
      ? returned.constructor?.name || Object.prototype.toString.call(returned).slice(8, -1)
      : typeof returned;
  return `${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind}`;
}

/**
 * What to write instead, for the results that are there in another form: a typed array (an
 * onnxruntime tensor's `data`), a Set or a generator; or an async generator, which Ray Serve's
 * `@serve.batch` takes to stream results and which here would fail every batch.
 */
function remedy(returned: unknown): string {
  if (Array.isArray(returned) || typeof returned !== 'object' || returned === null) return '';
  if (Symbol.asyncIterator in returned)
    return ' (results are not streamed: collect what the async generator yields into an array)';
  if (Symbol.iterator in returned) return ' (Array.from() makes one of it)';
  return '';
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * A run that failed as a whole for a reason no run of a part would mend: its function returned
 * no result per item (`notOnePerItem`), a bug of its own whatever the items. Its batch's items
 * all fail with `error`, and the batch counts as failed (`failedBatches`, the breaker's dead
 * batches) without its items being isolated. Answered instead as an error in every slot, a
 * function that returned nothing failed every call and never opened the breaker.
 */
export class WholeRunFailure {
  constructor(readonly error: Error) {}
}
