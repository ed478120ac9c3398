import { readFile } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';
import { clipped, MAX_LISTING_DETAIL_CHARS } from '../message-text.js';
import { formatAffineMs } from '../options/affine-latency.js';
import { checkPriorityOptions } from '../options/batching.js';
import { formatPriorityQueuePolicy } from '../options/priority-queue-policy.js';
import { parseOptionValue, type OptionSpec } from '../options/schema.js';
import { described, typeExpected } from '../options/code-options.js';
import { MODEL_VERSION_OPTIONS, type ModelVersionConfig } from '../options/serve.js';
import { type LatencyProfile, readLatencyProfile } from '../profile/latency-profile.js';
import { type GivenAs, givenOptions, optionGivenAs, withGiven } from '../options/given.js';

/** Which numbered versions of a model are served (Triton's `version_policy`). */
export type VersionPolicy = { latest: number } | { all: true } | { specific: number[] };

/** What a model's `config.json` says: its own options, which versions to serve, its labels file and its author's parameters. */
export interface ModelConfigFile {
  options: Partial<ModelVersionConfig>;
  versionPolicy: VersionPolicy;
  /** Triton's `label_filename`: a file in the model's folder holding its class labels. */
  labelFilename?: string;
  /** A code model's export that runs a batch, when not `execute` (the middleware's `function`). */
  functionName?: string;
  /**
   * `parameters`: the model author's own values, as written, for a code model's `initialize`
   * (`config.parameters`), as Triton's Python backend reads its config's `parameters`.
   */
  parameters: Record<string, unknown>;
}

/**
 * A model's `latency_profile` read as one of its settings: a problem is INVALID_MODEL_CONFIG
 * naming `field` (a config.json's, a registration body's) and the path as `shown`, where a flag's
 * is INVALID_OPTION.
 */
export function readModelLatencyProfile(path: string, field: string, shown = path): Promise<LatencyProfile> {
  return readLatencyProfile(path, field, shown).catch((error: unknown) => {
    throw error instanceof BatchlineError ? new BatchlineError('INVALID_MODEL_CONFIG', error.detail) : error;
  });
}

/** A file directly in the model's folder: one name, no '/' (nor '\\'), not '.' or '..'. */
const LABEL_FILENAME = /^(?!\.\.?$)[^/\\\0]{1,255}$/;

const DEFAULT_POLICY: VersionPolicy = { latest: 1 };
/** The fields of a config.json besides the options. */
const FILE_FIELDS = ['version_policy', 'label_filename', 'parameters', 'function'];

/** A module's export, as `function` names it. */
const EXPORT_NAME = /^[A-Za-z_$][\w$]{0,127}$/;

/** `function`: the name of a code model's export that runs a batch, or INVALID_MODEL_CONFIG. */
function functionNameOf(value: unknown, where: string): string {
  if (typeof value === 'string' && EXPORT_NAME.test(value)) return value;
  throw invalid(`${where}: function: got ${JSON.stringify(value)}, expected the name of the module's export`);
}

/** `maxBatchSize` → `max_batch_size`. */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * The config.json fields, derived from the per-version option schema: every option there (the
 * batching options included, whoever adds them) is a field, checked with the flag's own range.
 */
export const CONFIG_FIELDS: ReadonlyMap<string, { key: keyof ModelVersionConfig; spec: OptionSpec }> = new Map(
  (Object.entries(MODEL_VERSION_OPTIONS) as [keyof ModelVersionConfig, OptionSpec][]).map(([key, spec]) => [
    snakeCase(key),
    { key, spec },
  ]),
);

/**
 * A version's options as config.json writes them, field by field (what parseModelOptions reads
 * back): `model_latency_ms` as `5+2n` or a number, `priority_queue_policy` in Triton's words,
 * `latency_profile` relative to the repository when inside it, the rest as they are. GET
 * /v1/models shows them so, and a registration takes them back.
 */
export function configJsonOf(config: ModelVersionConfig, repository?: string): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config) as [keyof ModelVersionConfig, unknown][])
    if (value !== undefined) json[snakeCase(key)] = configJsonValue(config, key, value, repository);
  return json;
}

/** One option's value as config.json writes it: the three whose inner form differs, the rest as they are. */
function configJsonValue(
  config: ModelVersionConfig,
  key: keyof ModelVersionConfig,
  value: unknown,
  repository: string | undefined,
): unknown {
  switch (key) {
    case 'modelLatencyMs':
      return config.modelLatencyMs.bMs === 0 ? config.modelLatencyMs.aMs : formatAffineMs(config.modelLatencyMs);
    case 'priorityQueuePolicy':
      return formatPriorityQueuePolicy(value as NonNullable<ModelVersionConfig['priorityQueuePolicy']>);
    case 'latencyProfile':
      return inRepository(value as string, repository);
    default:
      return value;
  }
}

/** A file inside the repository as config.json and a registration name it (relative to it); any other as it is. */
function inRepository(path: string, repository: string | undefined): string {
  if (repository === undefined) return path;
  const inside = relative(repository, path);
  return inside === '' || inside.startsWith('..') || isAbsolute(inside) ? path : inside;
}

/**
 * Checks the options of one model given as JSON (a config.json, or an admin request's body):
 * snake_case option names with the flags' ranges, plus `version_policy` where allowed. `where`
 * names the source in errors (`models/resnet/config.json`); `extraFields` are other fields the
 * caller reads itself. Throws INVALID_MODEL_CONFIG naming the file, the field and what it allows.
 */
export function parseModelOptions(
  json: unknown,
  where: string,
  extraFields: readonly string[] = FILE_FIELDS,
): ModelConfigFile {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw invalid(`${where}: expected a JSON object of options`);
  const options: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(json)) {
    const known = CONFIG_FIELDS.get(field);
    if (known === undefined) {
      if (extraFields.includes(field)) continue;
      throw new BatchlineError(
        'INVALID_MODEL_CONFIG',
        `${where}: unknown field "${clipped(field)}"; allowed: ${[...CONFIG_FIELDS.keys(), ...extraFields].join(', ')}`,
        { maxDetailChars: MAX_LISTING_DETAIL_CHARS },
      );
    }
    if (typeof value === 'object' && value !== null && known.spec.kind !== 'json')
      throw invalid(`${where}: ${field}: got ${JSON.stringify(value)}, expected a single value`);
    // JSON has numbers and booleans: "16" and "yes" were taken as a flag's text is, while the
    // middleware's workers and max_wait_time refused "2", one body under two rules.
    const takes = typeExpected(known.spec, value);
    if (takes !== undefined) throw invalid(`${where}: ${field}: got ${described(value)}, expected ${takes}`);
    options[known.key] = parseOptionValue(known.spec, value, `${where}: ${field}`, 'INVALID_MODEL_CONFIG');
  }
  // The levels may come from the flags; with its own, a file must agree with itself.
  if (options.priorityLevels !== undefined) checkPriorityOptions(options, 'INVALID_MODEL_CONFIG', where);
  const {
    version_policy: policy,
    label_filename: labels,
    parameters,
    function: functionName,
  } = json as { version_policy?: unknown; label_filename?: unknown; parameters?: unknown; function?: unknown };
  return {
    options: options as Partial<ModelVersionConfig>,
    versionPolicy:
      extraFields.includes('version_policy') && policy !== undefined
        ? parseVersionPolicy(policy, `${where}: version_policy`)
        : DEFAULT_POLICY,
    ...(extraFields.includes('label_filename') && labels !== undefined
      ? { labelFilename: labelFilenameOf(labels, where) }
      : {}),
    ...(extraFields.includes('function') && functionName !== undefined
      ? { functionName: functionNameOf(functionName, where) }
      : {}),
    parameters: extraFields.includes('parameters') ? parseParameters(parameters, `${where}: parameters`) : {},
  };
}

/** `label_filename` as Triton names it, a file in the model's folder (beside config.json), or INVALID_MODEL_CONFIG. */
function labelFilenameOf(value: unknown, where: string): string {
  if (typeof value === 'string' && LABEL_FILENAME.test(value)) return value;
  throw invalid(
    `${where}: label_filename: got ${JSON.stringify(value)}, expected the name of a file in the model's folder, such as "labels.txt"`,
  );
}

/** A model's `parameters`: any JSON object, handed to its `initialize` as it is. */
function parseParameters(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(
      `${where}: got ${clipped(JSON.stringify(value))}, expected a JSON object of the model's own values, such as {"threshold": 0.5}`,
    );
  if (depthOver(value, MAX_PARAMETERS_DEPTH))
    throw invalid(
      `${where}: nested more than ${MAX_PARAMETERS_DEPTH} levels deep; give the model plain values, as a config file holds them`,
    );
  return value as Record<string, unknown>;
}

/** How deep `parameters` may nest: its load copies them as JSON, whose recursion 5,000 levels overflowed (a 500). */
const MAX_PARAMETERS_DEPTH = 100;

/** Whether `value` nests objects or arrays more than `limit` deep, walked without recursion. */
function depthOver(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, depth] = next;
    if (depth > limit) return true;
    for (const child of Object.values(node as object))
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}

/** Reads `file` when it exists (a model without config.json takes the server's options). */
export async function readModelConfig(file: string): Promise<ModelConfigFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { options: {}, versionPolicy: DEFAULT_POLICY, parameters: {} };
    throw invalid(`${file}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw invalid(`${file}: not valid JSON (${(error as Error).message})`);
  }
  return parseModelOptions(json, file);
}

/**
 * A model's own options over the server's (flags, env, defaults), frozen. Throws when the
 * priority options of the two disagree (a config.json's levels against the flags' default level).
 */
export function effectiveConfig(
  server: ModelVersionConfig,
  own: Partial<ModelVersionConfig>,
  /** Where `own` comes from (a config.json), for the message. */
  where = '',
): ModelVersionConfig {
  const config: Record<string, unknown> = {};
  for (const key of Object.keys(MODEL_VERSION_OPTIONS))
    config[key] = (own as Record<string, unknown>)[key] ?? (server as Record<string, unknown>)[key];
  const ownPriorities =
    own.priorityLevels !== undefined || own.defaultPriorityLevel !== undefined || own.priorityQueuePolicy !== undefined;
  checkPriorityOptions(
    config as ModelVersionConfig,
    ownPriorities ? 'INVALID_MODEL_CONFIG' : 'INVALID_OPTION',
    ownPriorities ? where : '',
  );
  checkWarmupSizes(
    config as ModelVersionConfig,
    own.warmupBatchSizes !== undefined || own.maxBatchSize !== undefined ? where : undefined,
  );
  // Given: the server's options given, and the version's own; how, for those the server's options gave.
  const ownKeys = Object.keys(own).filter((key) => (own as Record<string, unknown>)[key] !== undefined);
  const fromServer: Record<string, GivenAs> = {};
  for (const key of givenOptions(server)) {
    const how = optionGivenAs(server, key);
    if (how !== undefined && !ownKeys.includes(key)) fromServer[key] = how;
  }
  return withGiven(config as ModelVersionConfig, [...givenOptions(server), ...ownKeys], fromServer);
}

/**
 * A warmup batch no larger than the batches the version runs: a larger one was refused only
 * after the server listened and loaded the model (exit 1, "could not load model", naming no
 * option), or 422 model_load_failed for a registration. `where` is given (a config.json, or '')
 * when the model's own options set either, which makes it a model configuration's mistake.
 */
function checkWarmupSizes(config: ModelVersionConfig, where: string | undefined): void {
  const sizes = config.warmupBatchSizes ?? [];
  if (!sizes.some((size) => size > config.maxBatchSize)) return;
  if (where === undefined)
    invalidOptionValue(
      '--warmup-batch-sizes',
      sizes.join(','),
      `batch sizes from 1 to --max-batch-size (${config.maxBatchSize})`,
    );
  throw invalid(
    `${where === '' ? '' : `${where}: `}warmup_batch_sizes: got ${JSON.stringify(sizes)}, expected batch sizes from 1 to max_batch_size (${config.maxBatchSize})`,
  );
}

/** The versions `policy` selects among those on disk, highest first. */
export function selectVersions(available: readonly number[], policy: VersionPolicy): number[] {
  const sorted = [...available].sort((a, b) => b - a);
  if ('latest' in policy) return sorted.slice(0, policy.latest);
  if ('all' in policy) return sorted;
  return sorted.filter((version) => policy.specific.includes(version));
}

function parseVersionPolicy(value: unknown, where: string): VersionPolicy {
  const allowed = `expected {"latest": N} (N >= 1), {"all": true} or {"specific": [versions]}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length !== 1) {
    throw invalid(`${where}: got ${JSON.stringify(value)}, ${allowed}`);
  }
  const policy = value as Record<string, unknown>;
  if (Number.isInteger(policy.latest) && (policy.latest as number) >= 1) return { latest: policy.latest as number };
  if (policy.all === true) return { all: true };
  const specific = policy.specific;
  if (Array.isArray(specific) && specific.length > 0 && specific.every((v) => Number.isInteger(v) && v >= 1))
    return { specific: specific as number[] };
  throw invalid(`${where}: got ${JSON.stringify(value)}, ${allowed}`);
}

function invalid(detail: string): BatchlineError {
  return new BatchlineError('INVALID_MODEL_CONFIG', detail);
}
