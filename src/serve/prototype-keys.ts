import { BatchlineError } from '../errors.js';

/**
 * Refuses a parsed JSON body holding a key that would set an object's prototype where code
 * copies it by assignment: `__proto__`, or a `constructor` object with a `prototype` (the keys
 * Fastify's parser refuses). `JSON.parse` itself makes them own data properties, harmless until
 * assigned. Fastify refused them as "Body is not valid JSON but content-type is set to
 * 'application/json'", which a valid body was not, and named no key; this names its path.
 */
export function refusePrototypeKeys(text: string, value: unknown): void {
  // As secure-json-parse: most bodies hold neither word, and are not walked.
  if (!text.includes('__proto__') && !text.includes('constructor')) return;
  const path = prototypeKeyIn(value, '');
  if (path !== undefined)
    throw new BatchlineError(
      'BAD_REQUEST',
      `request body: "${path}" is refused: a key that would set an object's prototype`,
    );
}

/** The first such key's path (`parameters.__proto__`, `constructor.prototype`), or undefined. */
function prototypeKeyIn(value: unknown, at: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key];
    const path = Array.isArray(value) ? `${at}[${key}]` : at === '' ? key : `${at}.${key}`;
    if (key === '__proto__') return path;
    if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype'))
      return `${path}.prototype`;
    const found = prototypeKeyIn(child, path);
    if (found !== undefined) return found;
  }
  return undefined;
}
