/**
 * The stuck limit of a warmup batch, on warmUpInstance itself: a limit longer than Node's longest
 * timer (2^31 - 1 ms) is still a limit, not the 1 ms a single setTimeout of it fires after.
 */
import { describe, expect, it } from 'vitest';
import type { ItemTensors, TensorSpec } from '../../src/model/tensor-spec.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { REGISTRATION_BODY } from '../../src/serve/version-log.js';
import { warmUpInstance, warmupStuckLimit } from '../../src/serve/warmup.js';

const INPUTS: TensorSpec[] = [{ name: 'x', type: 'float32', itemShape: [1] }];

/** A run that answers each item after `afterMs`, as a model that takes that long. */
function runTaking(afterMs: number): (items: ItemTensors[]) => Promise<ItemTensors[]> {
  return (items) => new Promise((resolve) => setTimeout(() => resolve(items), afterMs));
}

describe('a warmup batch stuck limit', () => {
  it('past the longest timer (--stuck-batch-factor 3 × --request-timeout-ms 1e9) lets a 30 ms batch finish', async () => {
    const stuck = warmupStuckLimit({ stuckBatchFactor: 3, requestTimeoutMs: 1e9 });
    expect(stuck.afterMs).toBe(3e9);
    await expect(
      warmUpInstance(INPUTS, { batchSizes: [2], data: 'zero', stuck }, 0, runTaking(30)),
    ).resolves.toBeUndefined();
  });

  it('within the longest timer still ends a batch that never returns', async () => {
    const stuck = warmupStuckLimit({ stuckBatchFactor: 2, requestTimeoutMs: 10 });
    await expect(
      warmUpInstance(INPUTS, { batchSizes: [1], data: 'zero', stuck }, 0, () => new Promise(() => {})),
    ).rejects.toThrow(
      'warmup batch of 1 on instance 0 ran past 20 ms, the stuck limit a serving batch has (--stuck-batch-factor 2 × --request-timeout-ms 10): stuck',
    );
  });

  it('names each factor as it was given: a flag, the environment, a config.json, a registration', () => {
    const flags = resolveOptions(SERVE_OPTIONS, { stuckBatchFactor: 3, requestTimeoutMs: 250 }, {});
    expect(warmupStuckLimit(flags).why).toBe('--stuck-batch-factor 3 × --request-timeout-ms 250');
    const env = resolveOptions(SERVE_OPTIONS, {}, { REQUEST_TIMEOUT_MS: '250' });
    expect(warmupStuckLimit(env).why).toBe('--stuck-batch-factor 2 × REQUEST_TIMEOUT_MS (--request-timeout-ms) 250');
    const fromFile = { requestTimeoutMs: { name: 'request_timeout_ms', source: '/models/cls/config.json' } };
    expect(warmupStuckLimit(flags, fromFile).why).toBe(
      '--stuck-batch-factor 3 × request_timeout_ms 250 in /models/cls/config.json',
    );
    const registered = { requestTimeoutMs: { name: 'request_timeout_ms', source: REGISTRATION_BODY } };
    expect(warmupStuckLimit(flags, registered).why).toBe(
      "--stuck-batch-factor 3 × request_timeout_ms 250 in the registration's body",
    );
  });
});
