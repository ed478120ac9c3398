import { BatchlineError, shuttingDown } from '../errors.js';
import type { AnswerCounters } from './answer-counters.js';
import { parseVersion } from '../stats-contract/version-ref.js';
import type { ServerState } from '../stats-contract/server-stats.js';
import type { ModelVersion } from './model-version.js';
import type { Registry } from './registry.js';

/**
 * What a request names: a model (undefined: the default model) and a version as the client
 * gave it (a path segment, `?version=`, a gRPC field; undefined or '': the latest).
 */
export interface ModelRef {
  readonly name: string | undefined;
  readonly version?: unknown;
}

/** Where an inference request goes, or the error refusing it; either way, who counts its answer. */
export type Target =
  | { readonly version: ModelVersion; readonly refusal?: undefined; readonly counters: AnswerCounters }
  | { readonly version?: undefined; readonly refusal: BatchlineError; readonly counters: AnswerCounters };

/** 503 model_unavailable: `version` exists but takes no work (loading, draining, unavailable), and why. */
export function unavailable(version: ModelVersion): BatchlineError {
  const { state, reason } = version.status;
  return new BatchlineError(
    'MODEL_UNAVAILABLE',
    `'${version.name}' version ${version.version} is ${state}${reason === undefined ? '' : ` (${reason})`}`,
  );
}

/**
 * The one place a request's target is decided, for every route and transport: the server's
 * state, the registry's lookup of `(name | default, version | latest)`, the error refusing it
 * (a row of the error table) and the counters its answer goes to.
 */
export class Targets {
  constructor(
    private readonly runtime: {
      readonly registry: Registry;
      readonly state: ServerState;
      /** Who counts the answers that reach no model version. */
      readonly unattributed: AnswerCounters;
    },
  ) {}

  /** Who counts the answers of inference requests that reach no model version. */
  get unattributed(): AnswerCounters {
    return this.runtime.unattributed;
  }

  /**
   * The version an inference request is admitted into, or the refusal: 503 shutting_down while
   * the server drains; 404 model_not_found for no such model or version; 503 model_unavailable
   * while it loads (the server's start-up included), drains or has no instance up. The answer is
   * counted against the version found (the model's highest while all its versions drain), else
   * the server's unattributed count.
   */
  resolve(ref: ModelRef): Target {
    const runtime = this.runtime;
    const registry = runtime.registry;
    const version = parseVersion(ref.version);
    if (version instanceof BatchlineError) return { refusal: version, counters: runtime.unattributed };
    const name = ref.name ?? registry.defaultModel;
    const found = name === undefined ? undefined : registry.resolve(name, version);
    // The latest of a model whose versions are all being removed: counted on its highest still
    // (looked up only then: a request that finds its version asks the registry once).
    const counters =
      found ??
      (name === undefined || version !== undefined ? undefined : registry.versionsOf(name)[0]) ??
      runtime.unattributed;
    const state = runtime.state;
    if (state === 'draining' || state === 'stopped') return { refusal: shuttingDown(), counters };
    if (found === undefined) {
      const refusal =
        state === 'starting'
          ? new BatchlineError('MODEL_UNAVAILABLE', 'the server is starting: its models are loading')
          : name === undefined
            ? new BatchlineError(
                'MODEL_NOT_FOUND',
                `no default model among ${registry.names().join(', ')}; start with --default-model NAME or POST /models/{name}/predict`,
              )
            : this.notFound(name, version);
      return { refusal, counters };
    }
    if (!found.acceptsWork) return { refusal: unavailable(found), counters };
    return { version: found, counters: found };
  }

  /** The version `ref` names (its latest when it names none), in whatever state (metadata, readiness), or the error. */
  find(ref: ModelRef & { readonly name: string }): ModelVersion | BatchlineError {
    const version = parseVersion(ref.version);
    if (version instanceof BatchlineError) return version;
    return this.runtime.registry.resolve(ref.name, version) ?? this.notFound(ref.name, version);
  }

  /**
   * 400 bad_request for a gRPC message whose model name (`field`) is empty, proto3's value of a
   * field not set: a request that names no model, not one the server lacks. Triton answers it
   * INVALID_ARGUMENT (its "unknown model" status); NOT_FOUND said "no such model: ''".
   */
  emptyName(field: string): BatchlineError {
    const names = this.runtime.registry.names();
    return new BatchlineError(
      'BAD_REQUEST',
      `${field} is empty; ${names.length === 0 ? 'this server serves no model now' : `this server has ${names.map((n) => `'${n}'`).join(', ')}`}`,
    );
  }

  /** 404 model_not_found for `(name, version)`, saying what there is instead. */
  private notFound(name: string, version: number | undefined): BatchlineError {
    const registry = this.runtime.registry;
    const known = registry.versionsOf(name);
    if (known.length === 0) {
      const names = registry.names();
      return new BatchlineError(
        'MODEL_NOT_FOUND',
        `'${name}'; ${names.length === 0 ? 'this server serves no model now' : `this server has ${names.map((n) => `'${n}'`).join(', ')}`}`,
      );
    }
    if (version === undefined)
      return new BatchlineError('MODEL_NOT_FOUND', `'${name}': its versions are being removed`);
    return new BatchlineError(
      'MODEL_NOT_FOUND',
      `'${name}' has no version ${version}; it has ${known.map((v) => v.version).join(', ')}`,
    );
  }
}
