import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue, quotedValue } from '../options/invalid-option-value.js';
import type { ModelVersionConfig, ServeConfig } from '../options/serve.js';
import { TOY_MODEL_VERSION } from '../model/toy-model.js';
import { uncostableBatchSizeRefusal } from './item-batch-size.js';
import { effectiveConfig, snakeCase } from './model-config.js';
import { type OptionSources, optionSourcesOf } from './version-log.js';
import { MODEL_NAME_PATTERN, scanRepository, unreadTritonConfigWarning } from './repository.js';

/** A model version to load at start-up. */
export interface StartupVersion {
  name: string;
  version: number;
  /** The ONNX file or code model (`.mjs`); undefined for the embedded toy model. */
  path: string | undefined;
  config: ModelVersionConfig;
  /** A code model's export that runs a batch, when not `execute` (config.json's or a registration's `function`). */
  functionName?: string;
  /** Its class labels file when config.json names one (`label_filename`); else `model.labels.txt` beside the model, if there. */
  labelsPath?: string;
  /** Where its own options were written (a config.json, a registration): the log names them so. */
  optionSources?: OptionSources;
  /** Its config.json's (or registration's) `parameters`, for a code model's `initialize`. */
  parameters?: Record<string, unknown>;
}

/**
 * What `serve` loads at start-up, from its options: every selected version of a
 * `--model-repository`; or `--model PATH` as version 1 of `--model-name` (default the file's
 * stem); or the embedded toy model as `toy-logistic-v1` version 1. Also the default model of
 * POST /v1/infer: `--default-model`, or the only model. Throws INVALID_OPTION (exit 2) for
 * options that contradict each other (the admin listener's too), INVALID_MODEL_CONFIG for a bad
 * repository.
 */
export async function startupVersions(
  config: ServeConfig,
): Promise<{ versions: StartupVersion[]; defaultModel: string | undefined; warnings: string[] }> {
  checkAdminListener(config);
  let versions: StartupVersion[];
  const warnings: string[] = [];
  if (config.modelRepository !== undefined) {
    if (config.model !== undefined)
      throw new BatchlineError(
        'INVALID_OPTION',
        '--model and --model-repository: give one (put the model file in the repository as NAME/1/model.onnx)',
      );
    if (config.modelName !== undefined)
      throw new BatchlineError(
        'INVALID_OPTION',
        '--model-name names the --model file; in a repository a model is named by its folder',
      );
    const models = await scanRepository(config.modelRepository);
    // A Triton repository's settings would be silently lost: its batch limit, its dynamic batching.
    for (const model of models)
      if (model.unreadTritonConfig !== undefined) warnings.push(unreadTritonConfigWarning(model.unreadTritonConfig));
    versions = models.flatMap((model) => {
      const file = join(config.modelRepository!, model.name, 'config.json');
      const own = effectiveConfig(config, model.config.options, file);
      const optionSources = optionSourcesOf(model.config.options, file, snakeCase);
      return model.versions.map(({ version, path, labelsPath }) => ({
        name: model.name,
        version,
        path,
        config: own,
        optionSources,
        ...(labelsPath === undefined ? {} : { labelsPath }),
        ...(model.config.functionName === undefined ? {} : { functionName: model.config.functionName }),
        parameters: model.config.parameters,
      }));
    });
  } else {
    const layout = config.model === undefined ? undefined : repositoryLayoutOf(config.model);
    const name =
      config.modelName ??
      layout?.name ??
      (config.model === undefined ? TOY_MODEL_VERSION : basename(config.model).replace(/\.(onnx|m?js)$/i, ''));
    if (!MODEL_NAME_PATTERN.test(name)) {
      invalidOptionValue(
        '--model-name',
        name,
        `letters, digits, '_', '.' and '-' (at most 128)${config.modelName === undefined ? '; the file name is used when none is given' : ''}`,
      );
    }
    if (config.model !== undefined) await checkModelFile(config.model);
    versions = [{ name, version: layout?.version ?? 1, path: config.model, config: effectiveConfig(config, {}) }];
  }
  // An ONNX file's (or the embedded model's) batch of more than 4096 items, refused before the server listens.
  for (const version of versions) {
    const refusal = uncostableBatchSizeRefusal(version);
    if (refusal !== undefined) throw refusal;
  }
  const names = [...new Set(versions.map((version) => version.name))];
  if (config.defaultModel !== undefined && !names.includes(config.defaultModel)) {
    invalidOptionValue('--default-model', config.defaultModel, `one of ${names.join(', ')}`);
  }
  return { versions, defaultModel: config.defaultModel ?? (names.length === 1 ? names[0] : undefined), warnings };
}

/**
 * --admin-port and --admin-host place the admin API, so they need it (--admin-token) and each
 * other: without the token they were ignored, and --admin-host without --admin-port left the
 * admin API on the main listener, where an operator who named an operators-only address did not
 * expect it.
 */
function checkAdminListener(config: ServeConfig): void {
  if (config.adminToken === undefined && (config.adminPort !== 0 || config.adminHost !== undefined))
    throw new BatchlineError(
      'INVALID_OPTION',
      `${config.adminPort !== 0 ? '--admin-port' : '--admin-host'}: the admin API it places is off without --admin-token`,
    );
  if (config.adminHost !== undefined && config.adminPort === 0)
    throw new BatchlineError(
      'INVALID_OPTION',
      `--admin-host: got ${quotedValue(config.adminHost)}, but the admin API shares the main listener (--host) unless --admin-port gives it its own`,
    );
}

/**
 * A `--model` that is no file is the option's mistake, said before the server listens (exit 2),
 * as `--model-repository`'s is: it was exit 1 after "starting on …", naming no option. A file
 * that is there but no model is the model's (its load says why). profile says it the same way.
 */
export async function checkModelFile(path: string): Promise<void> {
  const found = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw new BatchlineError('INVALID_OPTION', `--model: cannot read ${path} (${error.code ?? error.message})`);
  });
  if (!found.isFile())
    throw new BatchlineError('INVALID_OPTION', `--model: ${path} is not a file; give a model.onnx or a model.mjs`);
}

/**
 * The name and version a repository would give `NAME/VERSION/model.onnx` (or `.mjs`, `.js`): a
 * Triton layout given as `--model` was served as `model`, version 1, where its user looked for
 * `NAME` and `VERSION`. Undefined for any other path (the file name is the name, version 1).
 */
function repositoryLayoutOf(path: string): { name: string; version: number } | undefined {
  if (!/^model\.(onnx|m?js)$/i.test(basename(path))) return undefined;
  const versionDir = dirname(path);
  const version = Number(basename(versionDir));
  const name = basename(dirname(versionDir));
  if (!/^\d+$/.test(basename(versionDir)) || !Number.isSafeInteger(version) || version < 1) return undefined;
  return MODEL_NAME_PATTERN.test(name) ? { name, version } : undefined;
}
