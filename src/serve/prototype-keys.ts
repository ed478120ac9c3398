import { BatchlineError } from '../errors.js';

// A key "__proto__" or "constructor" as JSON may spell it, any letter as a \u escape (JSON.parse
// reads "\u005f_proto__" as __proto__): secure-json-parse's patterns, which Fastify's parser ran.
const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const CONSTRUCTOR_KEY =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

/**
 * Refuses a parsed JSON body holding a key that would set an object's prototype where code
 * copies it by assignment: `__proto__`, or a `constructor` object with a `prototype` (the keys
 * Fastify's parser refuses). `JSON.parse` itself makes them own data properties, harmless until
 * assigned. Fastify refused them as "Body is not valid JSON but content-type is set to
 * 'application/json'", which a valid body was not, and named no key; this names its path.
 */
export function refusePrototypeKeys(text: string, value: unknown): void {
  // As secure-json-parse: most bodies hold neither key (a word in a string is none), and are not walked.
  if (!PROTO_KEY.test(text) && !CONSTRUCTOR_KEY.test(text)) return;
  const path = prototypeKeyIn(value);
  if (path !== undefined)
    throw new BatchlineError(
      'BAD_REQUEST',
      `request body: "${path}" is refused: a key that would set an object's prototype`,
    );
}

/**
 * The first such key's path (`parameters.__proto__`, `constructor.prototype`), or undefined.
 * With a stack of its own: JSON.parse takes nesting far deeper than the call stack does.
 */
function prototypeKeyIn(value: unknown): string | undefined {
  const stack: { value: object; at: string }[] = [];
  const push = (child: unknown, at: string): void => {
    if (typeof child === 'object' && child !== null) stack.push({ value: child, at });
  };
  push(value, '');
  while (stack.length > 0) {
    const { value: node, at } = stack.pop()!;
    // Pushed last first, so the first key in the text is the one named.
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) push(node[i], `${at}[${i}]`);
      continue;
    }
    const keys = Object.keys(node);
    for (const key of keys) {
      const path = at === '' ? key : `${at}.${key}`;
      if (key === '__proto__') return path;
      const child = (node as Record<string, unknown>)[key];
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype'))
        return `${path}.prototype`;
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      push((node as Record<string, unknown>)[key], at === '' ? key : `${at}.${key}`);
    }
  }
  return undefined;
}
