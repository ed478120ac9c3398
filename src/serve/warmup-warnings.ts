import type { ModelVersionConfig } from '../options/serve.js';

/**
 * The warnings of a version's warmup settings, after the batching ones, in this order: settings
 * taken but with no effect, as `target_without_policy` is for the batching ones (Triton too
 * takes a configuration that does nothing, and says nothing; the log and a registration's
 * answer say it here).
 */
export const WARMUP_WARNINGS = ['warmup_dims_without_sizes', 'warmup_above_batch'] as const;
export type WarmupWarning = (typeof WARMUP_WARNINGS)[number];

/** How a warning names an option of the version (as written, or as its flag). */
export type OptionNamer = (key: keyof ModelVersionConfig) => string;

/**
 * `warmup_dims` without `warmup_batch_sizes`: no warmup batch runs, so the dims shape nothing.
 * A warmup size above `max_batch_size`: refused at a registration, it comes from a PATCH that
 * lowered the limit, after which an added or restarted instance skips that size (and a full
 * batch is not warmed, unless the new limit is itself a warmup size).
 */
export function warmupWarnings(
  config: Pick<ModelVersionConfig, 'warmupDims' | 'warmupBatchSizes' | 'maxBatchSize'>,
  name: OptionNamer,
): { readonly warning: WarmupWarning; readonly message: string }[] {
  const warnings: { warning: WarmupWarning; message: string }[] = [];
  const sizes = config.warmupBatchSizes ?? [];
  if (config.warmupDims !== undefined && sizes.length === 0)
    warnings.push({
      warning: 'warmup_dims_without_sizes',
      message:
        `${name('warmupDims')} is given without ${name('warmupBatchSizes')}: no warmup batch runs, so it shapes nothing; ` +
        `give ${name('warmupBatchSizes')} (the batch sizes to warm, such as 1,8), or leave ${name('warmupDims')} out`,
    });
  const above = sizes.filter((size) => size > config.maxBatchSize);
  if (above.length > 0)
    warnings.push({
      warning: 'warmup_above_batch',
      message:
        `${name('warmupBatchSizes')} (${sizes.join(', ')}) has ${above.join(', ')} above ${name('maxBatchSize')} (${config.maxBatchSize}): ` +
        `an instance added or restarted skips ${above.length === 1 ? 'that size' : 'those sizes'}${sizes.includes(config.maxBatchSize) ? '' : `, and batches of ${config.maxBatchSize} are not warmed`}; ` +
        `raise ${name('maxBatchSize')} again, or register a version with sizes up to ${config.maxBatchSize}`,
    });
  return warnings;
}
