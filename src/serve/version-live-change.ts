import type { Batcher } from '../core/batcher.js';
import type { BatcherStats } from '../core/batcher-stats.js';
import { BatchlineError } from '../errors.js';
import type { InstanceWarmup } from '../model/instance-pool.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { withAlsoGiven } from '../options/given.js';
import type { ModelVersionConfig } from '../options/serve.js';
import type { ModelVersionState } from '../stats-contract/server-stats.js';
import type { VersionMetrics } from './version-metrics.js';
import type { OptionSources } from './version-log.js';
import { warmUpInstance, warmupStuckLimit } from './warmup.js';

/** What a change of a running version needs of the version (a ModelVersion once attached). */
export interface LiveChangeHost {
  readonly name: string;
  readonly version: number;
  readonly state: ModelVersionState;
  /** Why it drains, once it does: a removal (DELETE, Triton's unload) or the server's stop. */
  readonly drainedBecause: 'removed' | 'stopping' | undefined;
  /** Its options: a change replaces them (frozen). */
  config: ModelVersionConfig;
  /** Where its own options were written (its warmup's stuck limit names them so). */
  readonly optionSources: OptionSources;
  readonly model: ServedModel;
  readonly batcher: Batcher<ItemTensors, ItemTensors>;
  readonly stats: BatcherStats<ItemTensors, ItemTensors>;
  readonly metrics: VersionMetrics<ItemTensors, ItemTensors> | undefined;
}

/**
 * A running version's instances and batching settings changed without a new version (the admin
 * API's PATCH): its instances started (warmed) or retired, the PATCH answered once they are up or
 * have stopped, and a warmup for each instance added or restarted. Apart from the version's
 * loading, serving and draining, which it leaves as they are.
 */
export class VersionLiveChange {
  /** Resolves what waits for instance i to stop (a PATCH that retired it), once it has. */
  private readonly instanceGone = new Map<number, () => void>();
  /** The instances a PATCH is changing, from and to, until it has answered. */
  private resizing: { from: number; to: number } | undefined;

  constructor(private readonly host: LiveChangeHost) {}

  /**
   * Changes what a running version can change without a new version (the admin API's PATCH,
   * TorchServe's `PUT /models/{name}?min_worker=N`): the batcher's limit, window and target from
   * its next pass, and its instances. More instances start (threads or processes, as the version's
   * execution says), each slot taking batches once its instance is up; resolves when all are, or
   * rejects MODEL_LOAD_FAILED, the count back as it was, if one could not start. Fewer retire the
   * highest slots, each once its running batch (and its mailbox's) has ended; resolves once their
   * instances have stopped. Refused (409) unless the version is ready and no other change of its
   * instances is under way. The values have been checked.
   */
  async change(
    changes: Partial<Pick<ModelVersionConfig, 'instances' | 'maxBatchSize' | 'batchWindowMs' | 'targetLatencyMs'>>,
  ): Promise<void> {
    const host = this.host;
    const key = `${host.name} version ${host.version}`;
    if (host.state !== 'ready')
      throw new BatchlineError('VERSION_BUSY', `${key} is ${host.state}; its settings change only while it is ready`);
    if (this.resizing !== undefined)
      throw new BatchlineError(
        'VERSION_BUSY',
        `${key}'s instances are changing from ${this.resizing.from} to ${this.resizing.to}; send it again once that PATCH has been answered`,
      );
    const previous = host.config;
    const before = previous.instances;
    const instances = changes.instances === before ? undefined : changes.instances;
    const model = host.model;
    if (instances !== undefined && (model.growInstances === undefined || model.retireInstance === undefined))
      throw new BatchlineError(
        'INVALID_MODEL_CONFIG',
        `request body: instances: ${key} runs one onnxruntime session on the server's thread (execution ${host.config.execution}); register a version with "execution": "worker" (or "process") to change its instances`,
      );
    host.config = withAlsoGiven({ ...host.config, ...changes }, Object.keys(changes));
    if (changes.maxBatchSize !== undefined) {
      host.stats.setMaxBatchSize(changes.maxBatchSize);
      host.metrics?.maxBatchSizeChanged(changes.maxBatchSize);
    }
    const settings = {
      maxBatchSize: changes.maxBatchSize,
      batchWindowMs: changes.batchWindowMs,
      targetLatencyMs: changes.targetLatencyMs,
    };
    if (instances === undefined) return host.batcher.reconfigure(settings);
    this.resizing = { from: before, to: instances };
    try {
      if (instances > before) {
        // The new slots wait, down, until the pool says each instance is up.
        host.batcher.reconfigure({ ...settings, instances }, false);
        // Each added instance runs the warmup batches before it takes a batch, as at start-up.
        const grow = model.growInstances as NonNullable<ServedModel['growInstances']>;
        const failures = await grow(instances, this.instanceWarmup());
        this.throwIfGoneMeanwhile(key, 'its added instances came up');
        if (failures.length > 0) {
          // A refused PATCH changes nothing: the limit, window and target sent with it go back too.
          this.restoreSettings(previous);
          await this.retire(before);
          throw new BatchlineError(
            'MODEL_LOAD_FAILED',
            `${key}: ${failures.length} of the ${instances - before} instances added could not start (${failures[0]}); it keeps ${before}`,
          );
        }
      } else {
        await this.retire(instances);
        this.throwIfGoneMeanwhile(key, 'its retired instances stopped');
      }
    } finally {
      this.resizing = undefined;
    }
  }

  /**
   * A version removed (or the server stopping) while a PATCH waited for its instances: the change
   * did not take effect as asked, so no 200. 409 version_busy, what the same PATCH gets sent a
   * moment later (the version draining), not the 404 of one already gone: it is still there.
   */
  private throwIfGoneMeanwhile(key: string, waitedFor: string): void {
    const host = this.host;
    if (host.state === 'ready') return;
    const why = host.drainedBecause === 'stopping' ? 'the server began to stop' : 'it was deleted';
    throw new BatchlineError('VERSION_BUSY', `${key}: ${why} before ${waitedFor}; its PATCH did not take effect`);
  }

  /**
   * The warmup of an instance a PATCH adds, or one restarted: the version's warmup batches that fit its batch limit
   * now (a PATCH may have lowered it; no batch above it comes), on that instance alone.
   */
  instanceWarmup(): InstanceWarmup | undefined {
    const host = this.host;
    const { warmupBatchSizes, warmupCount, warmupData, warmupDims, maxBatchSize } = host.config;
    const batchSizes = warmupBatchSizes?.filter((size) => size <= maxBatchSize) ?? [];
    if (batchSizes.length === 0) return undefined;
    const inputs = host.model.inputs;
    return (index, run) =>
      warmUpInstance(
        inputs,
        {
          batchSizes,
          count: warmupCount,
          data: warmupData,
          dims: warmupDims,
          stuck: warmupStuckLimit(host.config, host.optionSources),
        },
        index,
        run,
      );
  }

  /**
   * A retiring instance found stuck (a thread inside native code, which cannot be stopped) ends
   * when its run returns, perhaps never: the PATCH that retired it stops waiting for it, and for
   * the retiring ones below it, which go after it. It is closed when its run returns.
   */
  stopWaitingForStuck(index: number): void {
    for (const [waiting, gone] of this.instanceGone)
      if (waiting <= index) {
        gone();
        this.instanceGone.delete(waiting);
      }
  }

  /** The limit, window and target of `previous` again (instances apart: `retire` sets them). */
  private restoreSettings(previous: ModelVersionConfig): void {
    const host = this.host;
    // previous's own copy, so what counts as given is what it was before the PATCH too.
    host.config = Object.freeze({ ...previous, instances: host.config.instances });
    host.stats.setMaxBatchSize(previous.maxBatchSize);
    host.batcher.reconfigure({
      maxBatchSize: previous.maxBatchSize,
      batchWindowMs: previous.batchWindowMs,
      targetLatencyMs: previous.targetLatencyMs,
    });
  }

  /** Down to `count` instances: resolves once the retired ones (each after its batches) have stopped. */
  private retire(count: number): Promise<void> {
    const host = this.host;
    const from = host.batcher.runningBatchSizes().length;
    const gone: Promise<void>[] = [];
    for (let index = count; index < from; index++)
      gone.push(new Promise<void>((resolve) => this.instanceGone.set(index, resolve)));
    host.config = Object.freeze({ ...host.config, instances: count });
    host.batcher.reconfigure({ instances: count });
    // One stuck already is not waited for (nor those below it), as one found stuck later.
    const stuck = host.model
      .health()
      .instances.filter((instance) => instance.state === 'stuck' && instance.index >= count);
    for (const instance of stuck) this.stopWaitingForStuck(instance.index);
    return Promise.all(gone).then(() => {});
  }

  /** Retired instance `index` has stopped: the PATCH that retired it may answer. */
  instanceStopped(index: number): void {
    this.instanceGone.get(index)?.();
    this.instanceGone.delete(index);
  }

  /** The version closes: a PATCH that waits for retired instances is answered (the pool's close stops them all). */
  answerWaiting(): void {
    for (const gone of this.instanceGone.values()) gone();
    this.instanceGone.clear();
  }
}
