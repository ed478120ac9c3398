import { BatchlineError } from '../errors.js';
import { isCodeModelPath } from '../model/code-model.js';
import { MAX_ITEM_BATCH_SIZE } from '../options/batching.js';
import type { ModelVersionConfig } from '../options/serve.js';
import { REGISTRATION_BODY, type OptionSources } from './version-log.js';

/**
 * A version that counts items takes max_batch_size up to 4096; only a code model that exports
 * `itemCost` takes more (a limit of cost, to MAX_SERVED_BATCH_COST). The options' range is the
 * costed one, since only the loaded module says which a version is: this holds the rest to 4096,
 * with the refusal the range gave before, named where the value was written (a config.json's
 * field, a registration's, else the flag). Undefined when within it.
 */
export function itemBatchSizeRefusal(
  config: Pick<ModelVersionConfig, 'maxBatchSize'>,
  sources: OptionSources | undefined,
): BatchlineError | undefined {
  const size = config.maxBatchSize;
  if (size <= MAX_ITEM_BATCH_SIZE) return undefined;
  const allowed = `expected an integer from 1 to ${MAX_ITEM_BATCH_SIZE}`;
  const written = sources?.maxBatchSize;
  if (written === undefined) return new BatchlineError('INVALID_OPTION', `--max-batch-size: got '${size}', ${allowed}`);
  // The body is named as its parse names it ("request body"), its warnings as the registration's.
  const where = written.source === REGISTRATION_BODY ? 'request body' : written.source;
  return new BatchlineError('INVALID_MODEL_CONFIG', `${where}: ${written.name}: got ${size}, ${allowed}`);
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
  const why = costedBatchingRefusal(config);
  return why === undefined ? undefined : new BatchlineError('MODEL_LOAD_FAILED', why);
}

/**
 * Why a version whose model exports `itemCost` cannot batch by cost with these options, if it
 * cannot: the adaptive policy and SLA admission size batches from the arrival rate and the
 * model's time per item, which count items (batch()'s own refusal, for the same reason).
 */
function costedBatchingRefusal(config: Pick<ModelVersionConfig, 'batchPolicy' | 'admission'>): string | undefined {
  const against = [
    ...(config.batchPolicy === 'adaptive' ? ['batch_policy adaptive'] : []),
    ...(config.admission === 'sla' ? ['admission sla'] : []),
  ];
  if (against.length === 0) return undefined;
  return `the model exports itemCost, which works with batch_policy fixed or aimd and admission queue; got ${against.join(' and ')}, whose estimates count items, not costs: set batch_policy (--batch-policy) to fixed or aimd and admission (--admission) to queue, or remove itemCost`;
}
