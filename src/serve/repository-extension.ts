import { join } from 'node:path';
import { BatchlineError } from '../errors.js';
import { effectiveConfig, snakeCase } from './model-config.js';
import {
  MODEL_NAME_PATTERN,
  repositoryRoot,
  modelFolders,
  scanModel,
  unreadTritonConfigWarning,
} from './repository.js';
import type { ModelVersion } from './model-version.js';
import type { ServingRuntime } from './serving-runtime.js';
import type { StartupVersion } from './startup.js';
import { optionSourcesOf, versionsWarningLines } from './version-log.js';

/** Triton's names of a version's states in the repository index. */
const INDEX_STATES: Readonly<Record<string, string>> = {
  loading: 'LOADING',
  ready: 'READY',
  draining: 'UNLOADING',
  unavailable: 'UNAVAILABLE',
};

/** One row of the repository index, as Triton's `RepositoryIndexResponse.ModelIndex` and its HTTP answer hold it. */
export interface IndexRow {
  name: string;
  version?: string;
  state?: string;
  reason?: string;
}

/**
 * Triton's model repository extension, whatever the protocol (`/v2/repository/…` on HTTP,
 * `Repository*` over gRPC): the same index, load and unload, the same refusals from the error
 * table. The caller has checked the admin token.
 */

/** Every model of the repository with each served version's state; a model not served is UNAVAILABLE `unloaded`; `ready`: the ready ones only. */
export async function repositoryIndex(runtime: ServingRuntime, ready: boolean): Promise<IndexRow[]> {
  const dir = repositoryDirectory(runtime);
  // Its folders, not their models read: one bad config.json hid every model not loaded. A
  // repository that is gone is the operator's to mend, and said so.
  const onDisk = await modelFolders(dir).catch(async (error: unknown) => {
    await readableRepository(dir);
    throw error;
  });
  const rows: IndexRow[] = [];
  // Besides the repository's folders, what the admin API serves under a name of its own, which
  // the index left out while it served.
  const names = [...new Set([...onDisk, ...runtime.registry.names()])].sort((a, b) => a.localeCompare(b));
  for (const name of names) {
    const served = runtime.registry.versionsOf(name);
    if (served.length === 0 && !ready) rows.push({ name, state: 'UNAVAILABLE', reason: 'unloaded' });
    for (const version of served) {
      const { state, reason } = version.status;
      if (ready && !version.acceptsWork) continue;
      rows.push({
        name,
        version: String(version.version),
        state: INDEX_STATES[state] ?? 'UNAVAILABLE',
        ...(reason === undefined ? {} : { reason }),
      });
    }
  }
  return rows;
}

/**
 * Serves the versions of model `name` that its config.json's version policy selects on disk:
 * loads those not served (resolving once they are ready), unloads those no longer selected.
 * `parameterNames`: the load parameters sent (a config or files), which are not served.
 */
export async function loadRepositoryModel(
  runtime: ServingRuntime,
  name: string,
  parameterNames: readonly string[] = [],
): Promise<void> {
  if (parameterNames.length > 0)
    throw new BatchlineError(
      'INVALID_MODEL_CONFIG',
      `load parameters (a config or files sent with the request: ${parameterNames.join(', ')}) are not served: put them in the repository`,
    );
  if (!MODEL_NAME_PATTERN.test(name)) throw new BatchlineError('MODEL_NOT_FOUND', `'${name}'`);
  const dir = repositoryDirectory(runtime);
  const model = await scanModel(dir, name).catch(async (error: unknown) => {
    // No folder of that name: said without the server's own path, which the client has no use for.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      await readableRepository(dir);
      throw new BatchlineError('MODEL_NOT_FOUND', `'${name}' is not in the repository`);
    }
    // Its folder is there but is no model (a bad config.json, no version): Triton's load fails with 400 too.
    if (error instanceof BatchlineError) throw error;
    throw new BatchlineError('MODEL_NOT_FOUND', `'${name}' in the repository: ${(error as Error).message}`);
  });
  if (model.unreadTritonConfig !== undefined)
    runtime.log(`batchline serve: warning: ${unreadTritonConfigWarning(model.unreadTritonConfig)}`);
  const config = effectiveConfig(runtime.config, model.config.options);
  const optionSources = optionSourcesOf(model.config.options, join(dir, name, 'config.json'), snakeCase);
  const wanted = new Set(model.versions.map((v) => v.version));
  // A copy: the registry's list changes in place while this awaits, and a version registered
  // meanwhile (by the admin API) is not this load's to remove.
  const served = [...runtime.registry.versionsOf(name)];
  const registered: ModelVersion[] = [];
  try {
    for (const { version, path, labelsPath } of model.versions) {
      const labels = labelsPath === undefined ? {} : { labelsPath };
      const functionName = model.config.functionName;
      const brought = await serveVersion(runtime, {
        name,
        version,
        path,
        config,
        optionSources,
        parameters: model.config.parameters,
        ...labels,
        ...(functionName === undefined ? {} : { functionName }),
      });
      if (brought !== undefined) registered.push(brought);
    }
  } finally {
    // The versions share the config.json: one line per warning naming them all, as start-up's
    // log says it (each version's own line repeated it), also for those up before one failed.
    for (const lines of versionsWarningLines(registered).values()) for (const line of lines) runtime.log(line);
  }
  for (const version of served) if (!wanted.has(version.version)) await runtime.deregister(version);
}

/** How many times a load looks again at a version that others load or remove meanwhile. */
const SERVE_VERSION_LOOKS = 8;

/**
 * Resolves once version `spec.version` of the model is ready: the one served when it is, or once
 * its load in progress ends; one being removed (an unload, a DELETE) or whose load failed is
 * replaced by a fresh load. A load answered 200 at once for a version still loading (an
 * inference then got 503), or one draining away (then not served at all), or one left
 * unavailable by a failed load.
 */
async function serveVersion(runtime: ServingRuntime, spec: StartupVersion): Promise<ModelVersion | undefined> {
  for (let look = 0; look < SERVE_VERSION_LOOKS; look++) {
    const there = runtime.registry.resolve(spec.name, spec.version);
    if (there === undefined) return await runtime.register(spec, true, { logWarnings: false });
    if (there.state === 'ready') return undefined;
    if (there.state === 'loading')
      await there.loaded; // then looked at again: ready, failed or removed
    else await runtime.deregister(there); // draining, or unavailable: gone, then loaded anew
  }
  throw new BatchlineError(
    'MODEL_UNAVAILABLE',
    `'${spec.name}' version ${spec.version} was loaded and removed by others ${SERVE_VERSION_LOOKS} times while this load waited`,
  );
}

/** Drains and removes every version of model `name`; MODEL_NOT_FOUND when none is served. */
export async function unloadRepositoryModel(runtime: ServingRuntime, name: string): Promise<void> {
  const served = runtime.registry.versionsOf(name);
  if (served.length === 0) throw new BatchlineError('MODEL_NOT_FOUND', `'${name}' is not loaded`);
  await Promise.all(served.map((version) => runtime.deregister(version)));
}

/** Throws the removed repository's INTERNAL error (`repository.ts`) when `dir` cannot be read. */
async function readableRepository(dir: string): Promise<void> {
  await repositoryRoot(dir);
}

function repositoryDirectory(runtime: ServingRuntime): string {
  const dir = runtime.config.modelRepository;
  if (dir === undefined)
    throw new BatchlineError(
      'BAD_MODEL_PATH',
      'this server was started without --model-repository; the repository extension loads models only from one',
    );
  return dir;
}
