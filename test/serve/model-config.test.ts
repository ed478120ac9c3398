import { describe, expect, it } from 'vitest';
import { BATCHING_OPTIONS } from '../../src/options/batching.js';
import { resolveOptions } from '../../src/options/schema.js';
import { MODEL_VERSION_OPTIONS, SERVE_OPTIONS } from '../../src/options/serve.js';
import {
  CONFIG_FIELDS,
  effectiveConfig,
  parseModelOptions,
  selectVersions,
  snakeCase,
} from '../../src/serve/model-config.js';
import { refusal } from '../refusal.js';

describe('config.json fields', () => {
  it('are the per-version options in snake_case, every batching option included', () => {
    expect([...CONFIG_FIELDS.keys()].sort()).toEqual(Object.keys(MODEL_VERSION_OPTIONS).map(snakeCase).sort());
    for (const key of Object.keys(BATCHING_OPTIONS)) expect(CONFIG_FIELDS.has(snakeCase(key)), key).toBe(true);
    for (const field of [
      'max_batch_size',
      'batch_window_ms',
      'max_queue_size',
      'request_timeout_ms',
      'instances',
      'execution',
      'model_latency_ms',
      'intra_op_threads',
    ]) {
      expect(CONFIG_FIELDS.has(field), field).toBe(true);
    }
  });

  it('take the flags’ values and ranges', () => {
    const parsed = parseModelOptions(
      { max_batch_size: 16, batch_window_ms: 2.5, execution: 'inline', version_policy: { latest: 2 } },
      'm/config.json',
    );
    expect(parsed.options).toEqual({ maxBatchSize: 16, batchWindowMs: 2.5, execution: 'inline' });
    expect(parsed.versionPolicy).toEqual({ latest: 2 });
    expect(parseModelOptions({}, 'm/config.json')).toEqual({
      options: {},
      versionPolicy: { latest: 1 },
      parameters: {},
    });
  });

  it.each([
    [{ max_batch_size: 0 }, 'm/config.json: max_batch_size: got 0, expected an integer from 1 to 4096'],
    [{ max_batch_size: 2.5 }, 'max_batch_size: got 2.5, expected an integer from 1 to 4096'],
    [{ batch_window_ms: 'soon' }, "batch_window_ms: got 'soon' (a string), expected a number from 0 to 60000"],
    // JSON's own types: the text '16' and 'yes' were taken as a flag's are, while workers refused '2'.
    [{ max_batch_size: '16' }, "max_batch_size: got '16' (a string), expected an integer from 1 to 4096"],
    [{ max_queue_size: '  7 ' }, "max_queue_size: got '  7 ' (a string), expected an integer"],
    [{ pipeline: 'yes' }, "pipeline: got 'yes' (a string), expected true or false"],
    [{ execution: 'gpu' }, "execution: got 'gpu', expected one of auto, inline, worker"],
    [{ instances: [2] }, 'instances: got [2], expected a single value'],
    [{ maxBatchSize: 8 }, 'unknown field "maxBatchSize"; allowed: max_batch_size'],
    [
      { version_policy: { latest: 0 } },
      'version_policy: got {"latest":0}, expected {"latest": N} (N >= 1), {"all": true} or {"specific": [versions]}',
    ],
    [{ version_policy: { specific: [] } }, 'version_policy: got {"specific":[]}'],
    [{ version_policy: { all: true, latest: 1 } }, 'version_policy: got'],
    [[1, 2], 'm/config.json: expected a JSON object of options'],
  ])('refuses %j naming the file, the field and what it allows', (json, message) => {
    const error = refusal(() => parseModelOptions(json, 'm/config.json'));
    expect(error.code).toBe('INVALID_MODEL_CONFIG');
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(message);
    expect(error.message).toMatch(/^invalid model configuration: m\/config\.json: /);
  });

  it('lists every field it allows after an unknown one, and quotes a long unknown name cut short', () => {
    // The list alone is over 400 characters, where an error's detail used to be cut, mid-name.
    const where = '/srv/models/a-model-with-a-long-name/config.json';
    const error = refusal(() => parseModelOptions({ dynamic_batching: {} }, where, ['version_policy']));
    expect(error.message).not.toContain('more characters');
    expect(error.message).toMatch(/; allowed: max_batch_size, .*, latency_profile, version_policy$/);
    const long = refusal(() => parseModelOptions({ ['x'.repeat(5000)]: 1 }, where));
    expect(long.message.length).toBeLessThan(1000);
    expect(long.message).toMatch(
      /; allowed: max_batch_size, .*, version_policy, label_filename, parameters, function$/,
    );
  });

  it('refuses parameters nested deeper than a model could mean, naming them (5,000 levels were a 500 at load)', () => {
    // The load copies them as JSON for the model's initialize: 5,000 levels overflowed the stack there.
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    expect(refusal(() => parseModelOptions({ parameters: deep }, 'request body')).message).toBe(
      'invalid model configuration: request body: parameters: nested more than 100 levels deep; give the model plain values, as a config file holds them',
    );
    let fine: Record<string, unknown> = { threshold: 0.5 };
    for (let i = 0; i < 99; i++) fine = { d: fine };
    expect(parseModelOptions({ parameters: fine }, 'request body').parameters).toBe(fine);
  });

  it("take Triton's label_filename, a file in the model's folder, and refuse a path", () => {
    const where = 'models/cls/config.json';
    expect(parseModelOptions({ label_filename: 'labels.txt' }, where).labelFilename).toBe('labels.txt');
    expect(parseModelOptions({}, where).labelFilename).toBeUndefined();
    for (const given of ['../../etc/passwd', 'sub/labels.txt', '..', '', 7])
      expect(refusal(() => parseModelOptions({ label_filename: given }, where)).message).toBe(
        `invalid model configuration: ${where}: label_filename: got ${JSON.stringify(given)}, expected the name of a file in the model's folder, such as "labels.txt"`,
      );
  });

  it('lays a model’s own options over the server’s flags', () => {
    const server = resolveOptions(SERVE_OPTIONS, { maxBatchSize: '4', batchWindowMs: '3' }, {});
    const config = effectiveConfig(server, { maxBatchSize: 32 });
    expect(config).toMatchObject({ maxBatchSize: 32, batchWindowMs: 3, maxQueueSize: 128 });
    expect(Object.keys(config).sort()).toEqual(Object.keys(MODEL_VERSION_OPTIONS).sort());
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('refuses warmup batches larger than the batches the version runs, as the one who set them wrote them', () => {
    const flags = resolveOptions(SERVE_OPTIONS, { maxBatchSize: '8', warmupBatchSizes: '1,8' }, {});
    expect(effectiveConfig(flags, {}).warmupBatchSizes).toEqual([1, 8]);
    // The flags alone: an option of the command (exit 2).
    const tooLarge = resolveOptions(SERVE_OPTIONS, { maxBatchSize: '8', warmupBatchSizes: '16' }, {});
    expect(refusal(() => effectiveConfig(tooLarge, {}))).toMatchObject({
      code: 'INVALID_OPTION',
      detail: "--warmup-batch-sizes: got '16', expected batch sizes from 1 to --max-batch-size (8)",
    });
    // A model's own max_batch_size under the flags' warmup: the model's configuration (a 400 for a registration).
    expect(refusal(() => effectiveConfig(flags, { maxBatchSize: 4 }, 'request body'))).toMatchObject({
      code: 'INVALID_MODEL_CONFIG',
      detail: 'request body: warmup_batch_sizes: got [1,8], expected batch sizes from 1 to max_batch_size (4)',
    });
  });

  it('selects versions by policy, highest first', () => {
    expect(selectVersions([1, 3, 2], { latest: 1 })).toEqual([3]);
    expect(selectVersions([1, 3, 2], { latest: 2 })).toEqual([3, 2]);
    expect(selectVersions([1, 3, 2], { all: true })).toEqual([3, 2, 1]);
    expect(selectVersions([1, 3, 2], { specific: [1, 3] })).toEqual([3, 1]);
  });
});
