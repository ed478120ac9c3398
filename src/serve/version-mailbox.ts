import type { ServedModel } from '../model/load-model.js';
import type { ModelVersionConfig } from '../options/serve.js';

/**
 * The mailbox a version's batcher gives each of its instances (`BatcherOptions.mailbox`), and
 * how many batches an inline model runs back to back (`inlineMailbox`, 0 when not inline).
 */
export function versionMailbox(
  model: ServedModel,
  config: ModelVersionConfig,
): { mailbox: boolean | number; inlineMailbox: number } {
  // --pipeline: an instance on another thread or in a process takes its next full batch while it
  // runs one (its mailbox): it finds it there instead of waiting for its result and the next batch to cross.
  // --inline-mailbox: an inline onnxruntime model takes that many, run back to back in one turn;
  // not with --model-latency-ms, whose pretend accelerator runs one batch at a time.
  const latency = config.modelLatencyMs;
  const inlineMailbox =
    model.runsInImmediates === true && latency.aMs === 0 && latency.bMs === 0 ? config.inlineMailbox : 0;
  // With item costs, none: the core's mailbox takes a batch of the limit's items, not of its cost.
  const costed = model.itemCost !== undefined;
  const mailbox =
    inlineMailbox > 0
      ? inlineMailbox
      : config.pipeline && model.watchInstances !== undefined && model.runsOnMainThread !== true && !costed;
  return { mailbox, inlineMailbox };
}
