import { BatchlineError } from '../errors.js';
import { isCodeModelPath } from '../model/code-model.js';
import { BATCHING_OPTIONS, MAX_ITEM_BATCH_SIZE } from '../options/batching.js';
import { optionGivenAs } from '../options/given.js';
import { parseOptionValue } from '../options/schema.js';
import type { ModelVersionConfig } from '../options/serve.js';
import { REGISTRATION_BODY, type OptionSources } from './version-log.js';

/**
 * A version that counts items takes max_batch_size up to 4096; only a code model that exports
 * `itemCost` takes more (a limit of cost, to MAX_SERVED_BATCH_COST). The options' range is the
 * costed one, since only the loaded module says which a version is: this holds the rest to 4096,
 * with the refusal the items' range (BATCHING_OPTIONS') gives, named where the value was written:
 * a config.json's field, a registration's, else as the server's options were given (the flag,
 * `MAX_BATCH_SIZE`, serve()'s `maxBatchSize`). Undefined when within it.
 */
export function itemBatchSizeRefusal(
  config: Pick<ModelVersionConfig, 'maxBatchSize'>,
  sources: OptionSources | undefined,
): BatchlineError | undefined {
  const size = config.maxBatchSize;
  if (size <= MAX_ITEM_BATCH_SIZE) return undefined;
  const written = sources?.maxBatchSize;
  if (written === undefined) {
    const given = optionGivenAs(config, 'maxBatchSize');
    // A spread copies the record: a copy whose value changed since (a sweep's point) is named as
    // given, with the value it has, where the record's value would pass the range.
    const value = given !== undefined && Number(given.value) === size ? given.value : String(size);
    return refusalOf(() => parseOptionValue(BATCHING_OPTIONS.maxBatchSize, value, given?.name ?? '--max-batch-size'));
  }
  // The body is named as its parse names it ("request body"), its warnings as the registration's.
  const where = written.source === REGISTRATION_BODY ? 'request body' : written.source;
  return refusalOf(() =>
    parseOptionValue(BATCHING_OPTIONS.maxBatchSize, size, `${where}: ${written.name}`, 'INVALID_MODEL_CONFIG'),
  );
}

/** The refusal `parse` throws (it does: the value is past the items' range). */
function refusalOf(parse: () => unknown): BatchlineError {
  try {
    parse();
  } catch (error) {
    if (error instanceof BatchlineError) return error;
    throw error;
  }
  throw new Error('max_batch_size past 4096 items passed the items range');
}

/**
 * The refusal before the load, for a version that cannot export itemCost: an ONNX file or the
 * embedded model is refused as before, before anything loads. A code model waits for its load.
 */
export function uncostableBatchSizeRefusal(spec: {
  readonly path: string | undefined;
  readonly config: Pick<ModelVersionConfig, 'maxBatchSize'>;
  readonly optionSources?: OptionSources | undefined;
}): BatchlineError | undefined {
  return isCodeModelPath(spec.path) ? undefined : itemBatchSizeRefusal(spec.config, spec.optionSources);
}

/**
 * The refusal of a loaded version's settings, now that its model says whether it batches by cost
 * (`costed`: it exports `itemCost`): a model that counts items is held to 4096 items a batch; one
 * that counts costs refuses the options whose estimates count items.
 */
export function loadedSettingsRefusal(
  config: Pick<ModelVersionConfig, 'maxBatchSize' | 'batchPolicy' | 'admission'>,
  sources: OptionSources | undefined,
  costed: boolean,
): BatchlineError | undefined {
  if (!costed) return itemBatchSizeRefusal(config, sources);
  const why = costedBatchingRefusal(config, sources);
  return why === undefined ? undefined : new BatchlineError('MODEL_LOAD_FAILED', why);
}

/**
 * Why a version whose model exports `itemCost` cannot batch by cost with these options, if it
 * cannot: the adaptive policy and SLA admission size batches from the arrival rate and the
 * model's time per item, which count items (batch()'s own refusal, for the same reason). Each
 * option is named where it was set (a flag, the environment, serve()'s options, a config.json,
 * the registration's body), where it had named the flags whatever had set it.
 */
function costedBatchingRefusal(
  config: Pick<ModelVersionConfig, 'batchPolicy' | 'admission'>,
  sources: OptionSources | undefined,
): string | undefined {
  const against: string[] = [];
  const fixes: string[] = [];
  if (config.batchPolicy === 'adaptive') {
    against.push(`batch_policy adaptive (${setBy(config, sources, 'batchPolicy', '--batch-policy')})`);
    fixes.push('batch_policy to fixed or aimd');
  }
  if (config.admission === 'sla') {
    against.push(`admission sla (${setBy(config, sources, 'admission', '--admission')})`);
    fixes.push('admission to queue');
  }
  if (against.length === 0) return undefined;
  return `the model exports itemCost, which works with batch_policy fixed or aimd and admission queue; got ${against.join(' and ')}, whose estimates count items, not costs: set ${fixes.join(' and ')}, or remove itemCost`;
}

/** Where option `key` was set: its config.json's or the registration's field, else how the options recorded it, else its flag. */
function setBy(
  config: object,
  sources: OptionSources | undefined,
  key: 'batchPolicy' | 'admission',
  flag: string,
): string {
  const written = sources?.[key];
  if (written !== undefined)
    return `${written.source === REGISTRATION_BODY ? 'request body' : written.source}: ${written.name}`;
  return optionGivenAs(config, key)?.name ?? flag;
}
