import { describe, expect, it } from 'vitest';
import { batchingConfigOf } from '../../src/options/batching.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { SIMULATE_OPTIONS } from '../../src/options/simulate.js';
import { effectiveConfig, parseModelOptions } from '../../src/serve/model-config.js';
import { refusal } from '../refusal.js';

describe('priority options', () => {
  it('take the levels, the default level and per-level queues from flags, as Triton names them', () => {
    const options = resolveOptions(
      SIMULATE_OPTIONS,
      {
        priorityLevels: '3',
        defaultPriorityLevel: '2',
        priorityQueuePolicy: '{"1": {"max_queue_size": 4, "default_timeout_microseconds": "250000"}}',
      },
      {},
    );
    expect(batchingConfigOf(options)).toMatchObject({
      priorityLevels: 3,
      defaultPriorityLevel: 2,
      priorityQueuePolicy: { 1: { maxQueueSize: 4, requestTimeoutMs: 250 } },
    });
    expect(resolveOptions(SERVE_OPTIONS, {}, {})).toMatchObject({ priorityLevels: 0, defaultPriorityLevel: 0 });
  });

  it.each([
    [{ priorityLevels: '101' }, "--priority-levels: got '101', expected an integer from 0 to 100"],
    [{ priorityQueuePolicy: '{1: 2}' }, "--priority-queue-policy: got '{1: 2}', expected JSON ("],
    [{ priorityQueuePolicy: '{"0": {}}' }, 'level "0" is not a level from 1'],
    [{ priorityQueuePolicy: '{"1": {"max_queue_size": 0}}' }, 'level 1: max_queue_size: got 0, expected an integer'],
    [{ priorityQueuePolicy: '{"1": {"timeout_action": "DELAY"}}' }, 'timeout_action DELAY and allow_timeout_override'],
  ])('refuse %j naming the flag and what it allows', (raw, message) => {
    const error = refusal(() => resolveOptions(SIMULATE_OPTIONS, raw, {}));
    expect(error.code).toBe('INVALID_OPTION');
    expect(error.message).toContain(message);
  });

  it('refuse a default level or a level policy past the levels', () => {
    const past = resolveOptions(SIMULATE_OPTIONS, { priorityLevels: '2', defaultPriorityLevel: '3' }, {});
    expect(refusal(() => batchingConfigOf(past)).message).toContain(
      '--default-priority-level (default_priority_level): got 3, expected 0 to --priority-levels (2)',
    );
    const policy = resolveOptions(SIMULATE_OPTIONS, { priorityQueuePolicy: '{"2": {"max_queue_size": 1}}' }, {});
    expect(refusal(() => batchingConfigOf(policy)).message).toContain('level 2 is past --priority-levels (0)');
  });

  it("are config.json fields, priority_queue_policy in Triton's object form", () => {
    const parsed = parseModelOptions(
      {
        priority_levels: 2,
        default_priority_level: 2,
        priority_queue_policy: { 2: { max_queue_size: 8, default_timeout_microseconds: 50_000 } },
      },
      'm/config.json',
    );
    expect(parsed.options).toEqual({
      priorityLevels: 2,
      defaultPriorityLevel: 2,
      priorityQueuePolicy: { 2: { maxQueueSize: 8, requestTimeoutMs: 50 } },
    });
    const inFile = refusal(() => parseModelOptions({ priority_levels: 2, default_priority_level: 5 }, 'm/config.json'));
    expect(inFile.code).toBe('INVALID_MODEL_CONFIG');
    expect(inFile.message).toContain('m/config.json: --default-priority-level (default_priority_level): got 5');
    // The levels from the flags, the default level from the file: checked once they meet.
    const server = resolveOptions(SERVE_OPTIONS, { priorityLevels: '2' }, {});
    expect(effectiveConfig(server, { defaultPriorityLevel: 1 })).toMatchObject({
      priorityLevels: 2,
      defaultPriorityLevel: 1,
    });
    expect(refusal(() => effectiveConfig(server, { defaultPriorityLevel: 3 })).code).toBe('INVALID_MODEL_CONFIG');
  });
});
