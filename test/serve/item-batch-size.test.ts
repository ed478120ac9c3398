/**
 * The refusal of a max_batch_size past 4096 for a version that counts items, named as the option
 * was given. Its words come from the options' record of how each was given, which a spread copies:
 * a copy whose value changed afterwards (simulate's sweep points) must still be refused, not fail.
 */
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { itemBatchSizeRefusal, loadedSettingsRefusal } from '../../src/serve/item-batch-size.js';

describe('itemBatchSizeRefusal', () => {
  it('names the flag with its text, as the range check does', () => {
    const config = resolveOptions(SERVE_OPTIONS, { maxBatchSize: '5000' }, {});
    const refusal = itemBatchSizeRefusal(config, undefined);
    expect(refusal).toBeInstanceOf(BatchlineError);
    expect(refusal?.message).toMatch(
      /^invalid option --max-batch-size: got '5000', expected an integer from 1 to 4096/,
    );
  });

  it('refuses a copy whose max_batch_size changed after its options resolved, named by the record, with the value it has', () => {
    const resolved = resolveOptions(SERVE_OPTIONS, {}, { MAX_BATCH_SIZE: '8' });
    const changed = { ...resolved, maxBatchSize: 5000 };
    const refusal = itemBatchSizeRefusal(changed, undefined);
    expect(refusal).toBeInstanceOf(BatchlineError);
    expect(refusal?.message).toMatch(
      /^invalid option MAX_BATCH_SIZE \(--max-batch-size\): got '5000', expected an integer from 1 to 4096/,
    );
  });

  it('is undefined within 4096', () => {
    expect(
      itemBatchSizeRefusal(resolveOptions(SERVE_OPTIONS, { maxBatchSize: '4096' }, {}), undefined),
    ).toBeUndefined();
  });
});

describe('loadedSettingsRefusal of a model that exports itemCost', () => {
  it('names the adaptive policy and SLA admission where they were set, not always by their flags', () => {
    const fromEnvironment = resolveOptions(SERVE_OPTIONS, { admission: 'sla' }, { BATCH_POLICY: 'adaptive' });
    expect(loadedSettingsRefusal(fromEnvironment, undefined, true)?.message).toContain(
      'got batch_policy adaptive (BATCH_POLICY (--batch-policy)) and admission sla (--admission), whose estimates count items, not costs: set batch_policy to fixed or aimd and admission to queue, or remove itemCost',
    );
    const fromConfig = resolveOptions(SERVE_OPTIONS, {}, {});
    const sources = { admission: { name: 'admission', source: 'words/config.json' } };
    expect(loadedSettingsRefusal({ ...fromConfig, admission: 'sla' }, sources, true)?.message).toContain(
      'got admission sla (words/config.json: admission)',
    );
    expect(loadedSettingsRefusal(fromConfig, undefined, true)).toBeUndefined();
  });
});
