import { readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, sep } from 'node:path';
import { BatchlineError } from '../errors.js';
import { readModelConfig, selectVersions, type ModelConfigFile } from './model-config.js';

/** The file of a version inside its folder, as Triton names it for ONNX. */
const MODEL_FILE = 'model.onnx';
/** …or the JavaScript module of a code model (src/model/code-model.ts). */
const CODE_MODEL_FILE = 'model.mjs';

/**
 * Why a folder that is not a model stops the server: every folder of the repository is read as a
 * model, as Triton's loader reads one (a folder that fails stops tritonserver at start by default),
 * except hidden ones (`.git`), which Triton reads too.
 */
const EVERY_FOLDER_IS_A_MODEL =
  "every folder of the repository is read as a model, except those whose name starts with '.': move other folders out";

/** A model name: a URL path segment and a Prometheus label value, so plain characters only. */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** The longest model name MODEL_NAME_PATTERN takes. */
export const MAX_MODEL_NAME_CHARS = 128;

/** One model of a repository: its options and the versions its policy selects, highest first. */
export interface RepositoryModel {
  name: string;
  config: ModelConfigFile;
  /** Each selected version's model file, and the labels file its config.json's `label_filename` names. */
  versions: { version: number; path: string; labelsPath?: string }[];
  /** The model's Triton `config.pbtxt`, when it has one: not read, and said so at start-up. */
  unreadTritonConfig?: string;
}

/** The warning a model's `config.pbtxt` gets: a Triton repository's batch limit would be lost silently. */
export function unreadTritonConfigWarning(path: string): string {
  return `${path} is not read: a model's settings are the config.json beside it, and the flags (docs/models.md#many-models-a-model-repository)`;
}

/**
 * Reads a model repository in Triton's layout: `DIR/NAME/VERSION/model.onnx` (or `model.mjs`, a
 * code model) and an optional `DIR/NAME/config.json`. Anything wrong (no models, a bad name, a version the policy names
 * that is not there, a bad config.json) throws INVALID_MODEL_CONFIG naming the place: the
 * server refuses to start rather than serve part of what was asked.
 */
export async function scanRepository(dir: string): Promise<RepositoryModel[]> {
  const models: RepositoryModel[] = [];
  for (const name of await modelFolders(dir)) models.push(await scanModel(dir, name));
  if (models.length === 0) throw invalid(`${dir} holds no models (expected NAME/VERSION/${MODEL_FILE})`);
  return models;
}

/**
 * The repository's folders, each a model by its name, sorted, without reading any: what its index
 * lists (a model whose config.json is bad is listed too). INVALID_OPTION when `dir` cannot be read.
 */
export async function modelFolders(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    throw new BatchlineError(
      'INVALID_OPTION',
      `--model-repository: cannot read ${dir} (${error.code ?? error.message})`,
    );
  });
  const names: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name)))
    if (!entry.name.startsWith('.') && (await isDirectory(join(dir, entry.name)))) names.push(entry.name);
  return names;
}

/** One model of the repository, its versions selected by its version policy (the repository extension loads it by name). */
export async function scanModel(dir: string, name: string): Promise<RepositoryModel> {
  const modelDir = join(dir, name);
  if (!MODEL_NAME_PATTERN.test(name))
    throw invalid(
      `${modelDir} is not a model: a model's name is letters, digits, '_', '.' and '-' (at most 128); ${EVERY_FOLDER_IS_A_MODEL}`,
    );
  const config = await readRepositoryModelConfig(dir, name);
  const onDisk: number[] = [];
  for (const entry of await readdir(modelDir, { withFileTypes: true })) {
    if (/^[1-9]\d{0,8}$/.test(entry.name) && (await isDirectory(join(modelDir, entry.name))))
      onDisk.push(Number(entry.name));
  }
  if (onDisk.length === 0)
    throw invalid(
      `${modelDir} is not a model: a model's folder holds a folder per version, named by its number (${join(modelDir, '1', MODEL_FILE)} or ${CODE_MODEL_FILE}), and an optional config.json; ${EVERY_FOLDER_IS_A_MODEL}`,
    );
  const policy = config.versionPolicy;
  if ('specific' in policy) {
    const missing = policy.specific.filter((version) => !onDisk.includes(version));
    if (missing.length > 0)
      throw invalid(
        `${join(modelDir, 'config.json')}: version_policy names version ${missing.join(', ')}, which ${modelDir} does not have`,
      );
  }
  const versions = [];
  for (const version of selectVersions(onDisk, policy)) {
    const dir = join(modelDir, String(version));
    const found: string[] = [];
    for (const name of [MODEL_FILE, CODE_MODEL_FILE])
      if ((await stat(join(dir, name)).catch(() => undefined))?.isFile() === true) found.push(name);
    if (found.length === 0) throw invalid(`${dir}: no ${MODEL_FILE} (or ${CODE_MODEL_FILE})`);
    if (found.length > 1) throw invalid(`${dir}: both ${MODEL_FILE} and ${CODE_MODEL_FILE}; keep one`);
    const labels = config.labelFilename === undefined ? {} : { labelsPath: join(modelDir, config.labelFilename) };
    versions.push({ version, path: join(dir, found[0]!), ...labels });
  }
  const tritonConfig = join(modelDir, 'config.pbtxt');
  const hasTritonConfig = (await stat(tritonConfig).catch(() => undefined))?.isFile() === true;
  return { name, config, versions, ...(hasTritonConfig ? { unreadTritonConfig: tritonConfig } : {}) };
}

/**
 * A model's `config.json` in the repository (its options and version policy), with a relative
 * `latency_profile` read inside the repository, as a registration's is: it was read from the
 * server's working directory, so 'm/profile.json' loaded only when serve ran in the repository.
 * An absolute one is the operator's file, taken as it is.
 */
export async function readRepositoryModelConfig(repository: string, name: string): Promise<ModelConfigFile> {
  const file = join(repository, name, 'config.json');
  const config = await readModelConfig(file);
  const given = config.options.latencyProfile;
  if (given === undefined || isAbsolute(given)) return config;
  const latencyProfile = await profileFileInRepository(repository, given).catch((error: unknown) => {
    throw error instanceof BatchlineError ? invalid(`${file}: ${error.detail}`) : error;
  });
  return { ...config, options: { ...config.options, latencyProfile } };
}

/**
 * The real path of `given`, a file an admin request names relative to the repository, or
 * BAD_MODEL_PATH saying why not. Only regular files inside the repository are loaded, ONNX
 * graphs (`.onnx`) or code models (`.mjs`, `.js`): no absolute paths, no `..`, no symbolic link
 * that leads out of it. A code model is code: the admin token can run the operator's modules
 * that are in the repository, never a file from elsewhere, and nothing a client sends.
 */
export function modelFileInRepository(repository: string, given: unknown, field = 'path'): Promise<string> {
  return fileInRepository(repository, given, field, 'resnet/2/model.onnx" or "embed/1/model.mjs', MODEL_FILE_NAME);
}

/**
 * The labels file `label_filename` names for model `name` (a file in its folder), confined to the
 * repository as model files are, or BAD_MODEL_PATH naming it (not there, or leading out of it).
 * The path returned keeps the name given, which the model configuration shows.
 */
export async function labelsFileInRepository(repository: string, name: string, labelFilename: string): Promise<string> {
  await fileInRepository(repository, `${name}/${labelFilename}`, 'label_filename', `${name}/labels.txt`);
  return join(repository, name, labelFilename);
}

/** What a model file may be: an ONNX graph, or a code model (a JavaScript module). */
const MODEL_FILE_NAME = /\.(onnx|m?js)$/i;

/**
 * The real path of a registration's `latency_profile`, confined as model files are: it was read
 * from any path (`/etc/shadow` answered "is not JSON", a missing one ENOENT).
 */
export function profileFileInRepository(repository: string, given: unknown): Promise<string> {
  return fileInRepository(repository, given, 'latency_profile', 'resnet/profile.json');
}

/**
 * The repository's real path; INTERNAL when it cannot be read: the operator's side, not the
 * request's, so a 500, but one that says what to mend (it was a bare ENOENT from realpath).
 */
export function repositoryRoot(repository: string): Promise<string> {
  return realpath(repository).catch((error: NodeJS.ErrnoException) => {
    throw new BatchlineError(
      'INTERNAL',
      `the model repository ${repository} cannot be read (${error.code ?? error.message}): moved or removed while serving?`,
    );
  });
}

async function fileInRepository(
  repository: string,
  given: unknown,
  field: string,
  example: string,
  modelFile?: RegExp,
): Promise<string> {
  if (typeof given !== 'string' || given === '')
    throw badPath(`"${field}" must be a file name relative to the model repository, such as "${example}"`);
  const shown = `${field === 'path' ? '' : `${field} `}${JSON.stringify(given.length > 200 ? `${given.slice(0, 200)}…` : given)}`;
  if (given.includes('\0')) throw badPath(`${shown} holds a NUL character`);
  if (isAbsolute(given)) throw badPath(`${shown} is absolute; give a path relative to the model repository`);
  if (given.split(/[\\/]/).includes('..'))
    throw badPath(`${shown} contains ".."; give a path inside the model repository`);
  if (modelFile !== undefined && !modelFile.test(given))
    throw badPath(
      `${shown} is neither an ONNX file (.onnx) nor a code model (.mjs, .js); batchline loads nothing else`,
    );
  const root = await repositoryRoot(repository);
  let real: string;
  try {
    real = await realpath(join(root, given));
  } catch (error) {
    throw badPath(
      `${shown}: no such file in the model repository (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
  if (!real.startsWith(root + sep))
    throw badPath(`${shown} leads outside the model repository (through a symbolic link)`);
  if (!(await stat(real)).isFile()) throw badPath(`${shown} is not a regular file`);
  return real;
}

function badPath(detail: string): BatchlineError {
  return new BatchlineError('BAD_MODEL_PATH', detail);
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

function invalid(detail: string): BatchlineError {
  return new BatchlineError('INVALID_MODEL_CONFIG', detail);
}
