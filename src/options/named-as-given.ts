import { BatchlineError } from '../errors.js';
import { givenAs, type OptionSchema } from './schema.js';

/**
 * A refusal of an option's value made after the options resolved (a model file that is not
 * there, a repository that cannot be read, a port in use) names its `--flag`; when the user set
 * only the option's environment variable, it names `ENV (--flag)`, as resolveOptions' own
 * refusals do (`MODEL=/nonexistent batchline serve` said `--model`, which was not given). Only the
 * option the message is about, the one it opens with: the others it names are hints of what to
 * write.
 */
export function namedAsGiven(
  error: unknown,
  schema: OptionSchema,
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): unknown {
  if (!(error instanceof BatchlineError) || error.code !== 'INVALID_OPTION') return error;
  const opening = /^--([a-z][a-z0-9-]*)(?=[:\s]|$)/.exec(error.detail);
  if (opening === null) return error;
  const entry = Object.entries(schema).find(([, spec]) => spec.flag === opening[1]);
  if (entry === undefined) return error;
  const named = givenAs(entry[1], raw[entry[0]], env);
  if (named === opening[0]) return error;
  const detail = named + error.detail.slice(opening[0].length);
  // The detail was made safe and clipped already: not clipped again.
  return new BatchlineError('INVALID_OPTION', detail, { cause: error.cause, maxDetailChars: detail.length });
}

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
