import type { LevelQueuePolicy } from '../core/batcher-options.js';

/** Longest default deadline a level may set: what --request-timeout-ms allows, in µs. */
const MAX_TIMEOUT_US = 1e12;
const MAX_QUEUE_SIZE = 10_000_000;

/**
 * Triton's `priority_queue_policy`: for some levels, their own `max_queue_size` and
 * `default_timeout_microseconds` (the others take --max-queue-size and --request-timeout-ms),
 * keyed by level as Triton's JSON form of the model configuration writes it. Throws an Error
 * saying what is wrong.
 */
export function parsePriorityQueuePolicy(json: unknown): Record<number, Partial<LevelQueuePolicy>> {
  const shape = 'an object of levels, e.g. {"1": {"max_queue_size": 16, "default_timeout_microseconds": 100000}}';
  // The message is what a refusal says is expected: "got 5, expected <message>".
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error(shape);
  const policies: Record<number, Partial<LevelQueuePolicy>> = {};
  for (const [key, value] of Object.entries(json)) {
    if (!/^[1-9]\d{0,2}$/.test(key)) throw new Error(`level "${key}" is not a level from 1; expected ${shape}`);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error(`level ${key}: expected an object with max_queue_size and/or default_timeout_microseconds`);
    const policy: Partial<LevelQueuePolicy> = {};
    for (const [field, setting] of Object.entries(value)) {
      if (field === 'max_queue_size') policy.maxQueueSize = whole(setting, 1, MAX_QUEUE_SIZE, `level ${key}: ${field}`);
      else if (field === 'default_timeout_microseconds')
        policy.requestTimeoutMs = whole(setting, 1, MAX_TIMEOUT_US, `level ${key}: ${field}`) / 1000;
      else
        throw new Error(
          `level ${key}: unknown field "${field}"; allowed: max_queue_size, default_timeout_microseconds (timeout_action DELAY and allow_timeout_override are not served)`,
        );
    }
    policies[Number(key)] = policy;
  }
  return policies;
}

/** The policy as Triton's JSON writes it (what parsePriorityQueuePolicy reads back). */
export function formatPriorityQueuePolicy(
  policies: Readonly<Record<number, Partial<LevelQueuePolicy>>>,
): Record<string, { max_queue_size?: number; default_timeout_microseconds?: number }> {
  const json: Record<string, { max_queue_size?: number; default_timeout_microseconds?: number }> = {};
  for (const [level, policy] of Object.entries(policies))
    json[level] = {
      ...(policy.maxQueueSize === undefined ? {} : { max_queue_size: policy.maxQueueSize }),
      ...(policy.requestTimeoutMs === undefined
        ? {}
        : { default_timeout_microseconds: Math.round(policy.requestTimeoutMs * 1000) }),
    };
  return json;
}

/** An integer from `min` to `max`, as a number or a decimal string (Triton's JSON writes uint64 as strings). */
function whole(value: unknown, min: number, max: number, name: string): number {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max)
    throw new Error(`${name}: got ${JSON.stringify(value)}, expected an integer from ${min} to ${max}`);
  return number;
}
