import { isAbsolute, relative } from 'node:path';
import type { BreakerState } from '../core/types.js';
import type { InstanceEvent } from '../model/instance-health.js';
import type { TensorSpec } from '../model/tensor-spec.js';
import { listedWithAnd } from '../message-text.js';
import { formatAffineMs } from '../options/affine-latency.js';
import {
  BATCHING_WARNINGS,
  type BatchingWarning,
  batchingWarnings,
  type QueueWarningOption,
} from '../options/batching-warnings.js';
import { givenOptions } from '../options/given.js';
import { MODEL_VERSION_OPTIONS, type ModelVersionConfig } from '../options/serve.js';
import { snakeCase } from './model-config.js';
import { WARMUP_WARNINGS, type WarmupWarning, warmupWarnings } from './warmup-warnings.js';

/**
 * Where a version's own options were written, option by option: the name as its source spells it
 * (`max_batch_size`, or the middleware's `max_wait_time` in a registration) and the source (a
 * config.json, a registration's body). An option missing here came from the flags (or defaults).
 */
export type OptionSources = Partial<
  Record<keyof ModelVersionConfig, { readonly name: string; readonly source: string }>
>;

/** The source of a registration's own options, as its warnings name it. */
export const REGISTRATION_BODY = "the registration's body";

/** The source of the options a PATCH changed, as its warnings name them. */
export const PATCH_BODY = "the PATCH's body";

/** What a version's log line reads of it (a `ModelVersion`, without importing it). */
export interface LoggedVersion {
  readonly name: string;
  readonly version: number;
  readonly config: ModelVersionConfig;
  readonly model: { readonly inputs: readonly TensorSpec[]; readonly itemCost?: unknown };
  readonly warmupMs: number | undefined;
  readonly batcher: { readonly levels: { readonly defaultLevel: number } };
}

/** `model=NAME version=N`: how every line about one version begins (key=value, for log queries). */
export function versionKey(name: string, version: number): string {
  return `model=${name} version=${version}`;
}

/** One loaded version as a line: its inputs and the options it runs with (after `state`, when given). */
export function versionLine(version: LoggedVersion, state?: string): string {
  const c = version.config;
  return (
    `${versionKey(version.name, version.version)} ${state === undefined ? '' : `${state} `}` +
    `inputs=${version.model.inputs.map((s) => `${s.name}${JSON.stringify(s.itemShape)}:${s.type}`).join(',')} ` +
    `max_batch_size=${c.maxBatchSize}${version.model.itemCost === undefined ? '' : ' item_cost=true'} batch_window_ms=${c.batchWindowMs} max_queue_size=${c.maxQueueSize} ` +
    `request_timeout_ms=${c.requestTimeoutMs} instances=${c.instances} model_latency_ms=${formatAffineMs(c.modelLatencyMs)} batch_policy=${c.batchPolicy} admission=${c.admission}` +
    (c.priorityLevels > 1
      ? ` priority_levels=${c.priorityLevels} default_priority_level=${version.batcher.levels.defaultLevel}`
      : '') +
    (version.warmupMs === undefined
      ? ''
      : ` warmup_ms=${version.warmupMs.toFixed(1)} (batches of ${c.warmupBatchSizes?.join(', ')}${c.warmupCount > 1 ? `, each ${c.warmupCount} times,` : ''} on ${c.instances} instance${c.instances === 1 ? '' : 's'})`)
  );
}

/**
 * The warnings under a version's line: its queue cannot hold a full batch (`queueBelowBatchSize`),
 * a request that comes alone misses its deadline in the window (`deadlineWithinWindow`), or a
 * target latency was given to the fixed policy, which never reads it (`targetWithoutPolicy`); for the
 * versions loaded at start-up and for those registered while serving alike. Each option is named
 * as the operator wrote it (a flag, a config.json field, a registration's field), and the end says
 * where those not given as flags were written.
 */
export function versionWarningLines(version: WarnedVersion): string[] {
  return versionsWarningLines([version]).get(version) ?? [];
}

/**
 * What the warnings read of a version: its model once loaded, which says whether it batches by
 * cost (`itemCost`), when its max_batch_size is a cost that its queue's bound, a count of requests,
 * does not compare with.
 */
type WarnedVersion = Pick<LoggedVersion, 'name' | 'version' | 'config'> & {
  readonly optionSources?: OptionSources;
  readonly model?: { readonly itemCost?: unknown } | undefined;
};

/**
 * The warnings of versions loaded together, each to be logged under the line of the version it is
 * keyed by: one line per warning and group of versions whose values come from the same place (the
 * versions of a model sharing its config.json, models given only the flags), naming them all,
 * instead of the same warning once per version.
 */
export function versionsWarningLines<V extends WarnedVersion>(versions: readonly V[]): Map<V, string[]> {
  const groups = new Map<string, V[]>();
  for (const version of versions)
    for (const { message } of warningsOf(version)) groups.set(message, [...(groups.get(message) ?? []), version]);
  const lines = new Map<V, string[]>();
  for (const [warning, group] of groups) {
    const byModel = new Map<string, number[]>();
    for (const v of group) byModel.set(v.name, [...(byModel.get(v.name) ?? []), v.version]);
    const who = [...byModel]
      .map(([name, numbers]) =>
        numbers.length === 1
          ? versionKey(name, numbers[0]!)
          : `model=${name} versions=${numbers.sort((x, y) => x - y).join(',')}`,
      )
      .join(', ');
    const leader = group[0]!;
    lines.set(leader, [...(lines.get(leader) ?? []), `batchline serve: warning: ${who}: ${warning}`]);
  }
  return lines;
}

/**
 * A version's warning as a registration's answer gives it: a stable code, the name of batch()'s
 * warning code in the answers' lower case (`BATCHLINE_TARGET_WITHOUT_POLICY`: `target_without_policy`),
 * as the error table's codes are, and its text.
 */
export interface VersionWarning {
  readonly code: VersionWarningCode;
  readonly message: string;
}
/**
 * Every code a version's warning has, in the order they are said (docs/models.md's table is held
 * to it): the batching ones (batch()'s too), then the warmup's, serve's own.
 */
export const VERSION_WARNING_CODES = [...BATCHING_WARNINGS, ...WARMUP_WARNINGS] as const;
export type VersionWarningCode = BatchingWarning | WarmupWarning;

/**
 * The warnings of a version registered through the admin API, for its answer: a caller (a CI job,
 * a script) never sees the server's log. Each option is named as the caller or its config.json
 * wrote it, one the server's flags (or environment) gave as its flag, and one left to its default
 * as the registration's field that would set it, which the caller can send; a config.json is
 * named relative to `repository` (when the server has one), as the answer's `config` names files.
 */
export function registrationWarnings(version: WarnedVersion, repository: string | undefined): VersionWarning[] {
  const sources: OptionSources = {};
  for (const [key, from] of Object.entries(version.optionSources ?? {}))
    sources[key as keyof ModelVersionConfig] = {
      name: from.name,
      source: repository !== undefined && isAbsolute(from.source) ? relative(repository, from.source) : from.source,
    };
  const given = givenOptions(version.config);
  return warningsOf(
    {
      name: version.name,
      version: version.version,
      config: version.config,
      optionSources: sources,
      model: version.model,
    },
    (key) => sources[key]?.name ?? (given.has(key) ? undefined : snakeCase(key)),
  );
}

/**
 * The warnings after the version they are about; none when its settings work. `nameOf` names an
 * option (undefined: as its flag); by default as its source wrote it, else as the flag.
 */
function warningsOf(
  version: WarnedVersion,
  nameOf: (key: keyof ModelVersionConfig) => string | undefined = (key) => version.optionSources?.[key]?.name,
): VersionWarning[] {
  const config = version.model?.itemCost === undefined ? version.config : { ...version.config, itemCosts: true };
  const named = (key: keyof ModelVersionConfig): string => nameOf(key) ?? `--${MODEL_VERSION_OPTIONS[key].flag}`;
  return [
    ...batchingWarnings(
      config,
      givenOptions(version.config),
      nameOf as (key: QueueWarningOption) => string | undefined,
    ),
    ...warmupWarnings(version.config, named),
  ].map(({ warning, message }) => ({
    code: warning,
    message: withSources(message, version.optionSources ?? {}),
  }));
}

/** A warning with where the options it names were written, those not given as flags. */
function withSources(warning: string, sources: OptionSources): string {
  const written = new Map<string, string[]>();
  for (const key of [
    'maxQueueSize',
    'maxBatchSize',
    'batchWindowMs',
    'requestTimeoutMs',
    'batchPolicy',
    'targetLatencyMs',
    'warmupBatchSizes',
    'warmupDims',
  ] as const) {
    const from = sources[key];
    if (from === undefined || !warning.includes(from.name)) continue;
    written.set(from.source, [...(written.get(from.source) ?? []), from.name]);
  }
  const where = [...written].map(([source, names]) => `${listedWithAnd(names)} in ${source}`).join('; ');
  return `${warning}${where === '' ? '' : ` (${where})`}`;
}

/** The sources of the options of `own` (a config.json's or a registration's), each named as `nameOf` says. */
export function optionSourcesOf(
  own: Partial<ModelVersionConfig>,
  source: string,
  nameOf: (key: keyof ModelVersionConfig) => string,
): OptionSources {
  const sources: Record<string, { name: string; source: string }> = {};
  for (const [key, value] of Object.entries(own))
    if (value !== undefined) sources[key] = { name: nameOf(key as keyof ModelVersionConfig), source };
  return sources as OptionSources;
}

/**
 * An instance's event as a log line: which instance, what happened, and what follows for the
 * operator (a restart, or /healthz answering 503 so that the process is restarted).
 */
export function instanceEventLine(name: string, version: number, event: InstanceEvent): string {
  const who = `batchline serve: ${versionKey(name, version)} instance=${event.index}`;
  switch (event.kind) {
    case 'down':
      return (
        `${who} down: ${event.why}; restarting in ${event.restartInMs} ms` +
        (event.live ? '' : ` (${event.failuresInARow} failures in a row: /healthz answers 503 until it is back)`)
      );
    case 'stuck':
      return `${who} ${event.why}; out of the rotation until it returns (a thread in native code cannot be stopped): /healthz answers 503`;
    case 'up':
      return event.after === 'restart'
        ? `${who} up again (restart ${event.restarts})`
        : event.after === 'start'
          ? `${who} up: added while serving`
          : `${who} up again: its stuck batch returned`;
    case 'finalize_failed':
      return `${who} closed; its finalize threw: ${event.why}`;
  }
}

/**
 * The circuit breaker's change as a log line: it opened (and for how long requests are refused),
 * lets a probe through, or closed again. Only /metrics' batchline_breaker_state told of it, so
 * an operator reading the log saw a wall of 503 circuit_open with nothing saying why or until when.
 */
export function breakerEventLine(name: string, version: number, state: BreakerState, openMs: number): string {
  const who = `batchline serve: ${versionKey(name, version)} circuit breaker`;
  switch (state) {
    case 'open':
      return `${who} open: its batches keep failing (--breaker-failures, --breaker-ratio); requests are answered 503 circuit_open, and in ${openMs} ms a batch is let through as a probe`;
    case 'half_open':
      return `${who} half-open: the next batch is its probe`;
    case 'closed':
      return `${who} closed: its probe batch succeeded; serving again`;
  }
}
