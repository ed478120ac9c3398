import { BatchlineError } from '../errors.js';
import { givenAs, type OptionSchema } from './schema.js';

/**
 * A refusal of an option's value made after the options resolved (a model file that is not
 * there, a repository that cannot be read, a port in use) names its `--flag`; when the user set
 * only the option's environment variable, it names `ENV (--flag)`, as resolveOptions' own
 * refusals do (`MODEL=/nonexistent batchline serve` said `--model`, which was not given). Only the
 * option the message is about: the one an INVALID_OPTION opens with, the port after the address
 * of an ADDRESS_IN_USE or CANNOT_LISTEN (`127.0.0.1:8080 (--port)`, which `PORT=8080` set); the
 * others it names are hints of what to write.
 */
export function namedAsGiven(
  error: unknown,
  schema: OptionSchema,
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): unknown {
  if (!(error instanceof BatchlineError)) return error;
  const about = ABOUT[error.code]?.exec(error.detail);
  if (about === null || about === undefined) return error;
  const [whole, before, flag] = about as unknown as [string, string, string];
  const entry = Object.entries(schema).find(([, spec]) => spec.flag === flag);
  if (entry === undefined) return error;
  const named = givenAs(entry[1], raw[entry[0]], env);
  if (named === `--${flag}`) return error;
  const detail = `${before}${named}${error.detail.slice(whole.length)}`;
  // The detail was made safe and clipped already: not clipped again.
  return new BatchlineError(error.code, detail, { cause: error.cause, maxDetailChars: detail.length });
}

/** Where the option a refusal is about stands in its detail: what comes before it, its flag. */
const ABOUT: Partial<Record<BatchlineError['code'], RegExp>> = {
  INVALID_OPTION: /^()--([a-z][a-z0-9-]*)(?=[:\s]|$)/,
  ADDRESS_IN_USE: /^(\S+ \()--([a-z][a-z0-9-]*)(?=\))/,
  CANNOT_LISTEN: /^(\S+ \()--([a-z][a-z0-9-]*)(?=\))/,
};

/** Runs a command's work, its refusals naming each option as the user gave it (namedAsGiven). */
export async function withOptionsAsGiven<T>(
  schema: OptionSchema,
  raw: Record<string, unknown>,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw namedAsGiven(error, schema, raw);
  }
}
