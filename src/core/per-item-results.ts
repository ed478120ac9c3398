/**
 * The message for a batch function (the library's `fn`, a code model's `execute`) that did not
 * return one result per item, naming what it returned as a reader says it: "1 result",
 * "undefined", "an Object", "a Map".
 */
export function notOnePerItem(who: string, returned: unknown, size: number): string {
  return `${who} returned ${describeReturned(returned)} for a batch of ${count(size, 'item')}; it must return an array with one result (or Error) per item, in order`;
}

function describeReturned(returned: unknown): string {
  if (Array.isArray(returned)) return count(returned.length, 'result');
  if (returned === null || returned === undefined) return String(returned);
  const kind = typeof returned === 'object' ? (returned.constructor?.name ?? 'object') : typeof returned;
  return `${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind}`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
