import { join, relative } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BatchlineError } from '../errors.js';
import { isCodeModelPath } from '../model/code-model.js';
import { SERVE_OPTIONS } from '../options/serve.js';
import { effectiveConfig, parseModelOptions, readModelLatencyProfile, snakeCase } from './model-config.js';
import {
  labelsFileInRepository,
  MODEL_NAME_PATTERN,
  modelFileInRepository,
  profileFileInRepository,
  readRepositoryModelConfig,
} from './repository.js';
import { AdminToken } from './admin-token.js';
import { Answer, plainAnswer } from './answer.js';
import { modelsList, versionMetadata } from './model-routes.js';
import { OIP_ERRORS } from './oip-protocol.js';
import { servesRepositoryExtension } from './oip-not-served.js';
import { versionExists } from './registry.js';
import { registerRepositoryRoutes } from './repository-routes.js';
import type { ServingRuntime } from './serving-runtime.js';
import { parseVersion } from '../stats-contract/version-ref.js';
import {
  optionSourcesOf,
  PATCH_BODY,
  REGISTRATION_BODY,
  registrationWarnings,
  versionKey,
  versionWarningLines,
} from './version-log.js';
import { itemBatchSizeRefusal } from './item-batch-size.js';
import type { ModelVersion } from './model-version.js';

/** The fields of a registration besides the model's options. */
const REGISTRATION_FIELDS = ['version', 'path', 'module', 'function', 'wait', 'parameters', 'label_filename'] as const;

/**
 * The middleware's registration fields (its README's body: `module`, `function`, `version: "v2"`,
 * `max_batch_size`, `max_wait_time`, `workers`, `target_latency`), in batchline's words: seconds
 * become milliseconds, workers are instances. `module` is a path in the repository, as `path`.
 */
const MIDDLEWARE_FIELDS: Readonly<
  Record<string, { field: string; option: 'batchWindowMs' | 'targetLatencyMs' | 'instances'; scale: number }>
> = {
  max_wait_time: { field: 'batch_window_ms', option: 'batchWindowMs', scale: 1000 },
  target_latency: { field: 'target_latency_ms', option: 'targetLatencyMs', scale: 1000 },
  workers: { field: 'instances', option: 'instances', scale: 1 },
};

/** The body with the middleware's option names turned into batchline's; both for one option is an error. */
function inBatchlineWords(fields: Record<string, unknown>): Record<string, unknown> {
  const words: Record<string, unknown> = { ...fields };
  for (const [theirs, { field, option, scale }] of Object.entries(MIDDLEWARE_FIELDS)) {
    if (!(theirs in fields)) continue;
    if (field in fields)
      throw new BatchlineError('INVALID_MODEL_CONFIG', `request body: give ${theirs} or ${field}, not both`);
    const value = fields[theirs];
    // 0.01 s is 10 ms, not 10.000000000000002.
    const converted = typeof value === 'number' ? Math.round(value * scale * 1e6) / 1e6 : Number.NaN;
    // Checked here in the sender's words: the option's own check would say `batch_window_ms: got -1000` for -1 s.
    const spec = SERVE_OPTIONS[option];
    if (!(converted >= spec.min && converted <= spec.max) || (spec.kind === 'int' && !Number.isInteger(converted)))
      throw new BatchlineError(
        'INVALID_MODEL_CONFIG',
        `request body: ${theirs}: got ${JSON.stringify(value)}, expected ${spec.kind === 'int' ? 'an integer' : 'a number'}${scale === 1000 ? ' of seconds' : ''} from ${spec.min / scale} to ${spec.max / scale}`,
      );
    delete words[theirs];
    words[field] = converted;
  }
  if ('module' in fields && 'path' in fields)
    throw new BatchlineError('INVALID_MODEL_CONFIG', 'request body: give path or module, not both');
  return words;
}

/** What a PATCH changes in a running version, by config.json's names (the middleware's `workers`, `max_wait_time`, `target_latency` too). */
const LIVE_FIELDS = ['instances', 'max_batch_size', 'batch_window_ms', 'target_latency_ms'] as const;

/**
 * A PATCH's body, checked: a JSON object of at least one of LIVE_FIELDS (or the middleware's
 * names for them), each in its option's range; any other field is refused naming what a running
 * version can change.
 */
function liveChanges(body: unknown): Parameters<ModelVersion['reconfigure']>[0] {
  const expected = `request body: expected a JSON object of ${LIVE_FIELDS.join(', ')}, such as {"instances": 2}`;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BatchlineError('INVALID_MODEL_CONFIG', expected);
  const fields = inBatchlineWords(body as Record<string, unknown>);
  const fixed = Object.keys(fields).find((field) => !(LIVE_FIELDS as readonly string[]).includes(field));
  if (fixed !== undefined)
    throw new BatchlineError(
      'INVALID_MODEL_CONFIG',
      `request body: ${JSON.stringify(fixed.slice(0, 64))} cannot change in a running version; a PATCH changes ${LIVE_FIELDS.join(', ')} (register a new version for the others: POST /admin/models/{name})`,
    );
  if (Object.keys(fields).length === 0) throw new BatchlineError('INVALID_MODEL_CONFIG', expected);
  const { options } = parseModelOptions(fields, 'request body', []);
  const { instances, maxBatchSize, batchWindowMs, targetLatencyMs } = options;
  return {
    ...(instances === undefined ? {} : { instances }),
    ...(maxBatchSize === undefined ? {} : { maxBatchSize }),
    ...(batchWindowMs === undefined ? {} : { batchWindowMs }),
    ...(targetLatencyMs === undefined ? {} : { targetLatencyMs }),
  };
}

/**
 * The admin API, on `app` (the main listener or the admin one): `GET /admin/models`,
 * `POST /admin/models/{name}` (register a version of a model file in the repository),
 * `PATCH /admin/models/{name}/{version}` (change a running version's instances, batch limit,
 * window or target) and
 * `DELETE /admin/models/{name}/{version}` (drain it, then close it; without a version, 400), and Triton's repository
 * extension under /v2/repository (repository-routes.ts). Every request needs
 * `Authorization: Bearer <token>`: 401 without it, 403 with another token.
 */
export function registerAdminRoutes(app: FastifyInstance, runtime: ServingRuntime, token: string): void {
  const json = (reply: FastifyReply, status: number, body: unknown): void => plainAnswer(reply).json(body, status);
  // A failure that is no refusal is a bug: Fastify's error handler logs it and keeps its text from the client.
  const refuse = (reply: FastifyReply, error: unknown): void => {
    if (!(error instanceof BatchlineError)) throw error;
    plainAnswer(reply).error(error);
  };
  const adminToken = new AdminToken(token);

  app.register(async (scope) => {
    scope.addHook('onRequest', (request, reply, done) => {
      const refusal = adminToken.refusal(request.headers.authorization);
      if (refusal === undefined) return done();
      if (refusal.code === 'UNAUTHORIZED') reply.header('www-authenticate', 'Bearer realm="batchline admin"');
      // The repository extension answers in the protocol's format, which Triton's clients read.
      if (request.url.startsWith('/v2/')) new Answer(reply, OIP_ERRORS, undefined).error(refusal);
      else refuse(reply, refusal);
    });

    // Triton's repository calls load from the repository: without one, an unload could not be undone.
    if (servesRepositoryExtension(runtime.config)) registerRepositoryRoutes(scope, runtime);

    scope.get('/admin/models', (_request, reply) => {
      const repository = runtime.config.modelRepository;
      json(
        reply,
        200,
        modelsList(runtime.registry, (version) => ({
          file:
            version.path === undefined
              ? null
              : repository === undefined
                ? version.path
                : relative(repository, version.path),
          queue_depth: version.batcher?.queueDepth ?? 0,
          running: version.batcher?.runningCount ?? 0,
        })),
      );
    });

    scope.post('/admin/models/:name', async (request, reply) => {
      const { name } = request.params as { name: string };
      try {
        const body = request.body;
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          throw new BatchlineError(
            'INVALID_MODEL_CONFIG',
            'request body: expected a JSON object such as {"version": 2, "path": "resnet/2/model.onnx"}',
          );
        }
        const fields = inBatchlineWords(body as Record<string, unknown>);
        if (!MODEL_NAME_PATTERN.test(name))
          throw new BatchlineError(
            'INVALID_MODEL_CONFIG',
            `model name '${name}': letters, digits, '_', '.' and '-' (at most 128)`,
          );
        let version = versionOf(fields.version, runtime, name);
        const wait = fields.wait ?? true;
        if (typeof wait !== 'boolean')
          throw new BatchlineError(
            'INVALID_MODEL_CONFIG',
            `request body: wait: got ${JSON.stringify(wait)}, expected true or false`,
          );
        // The middleware's names are read above (inBatchlineWords); listed here for a misspelt one's refusal.
        const own = parseModelOptions(fields, 'request body', [
          ...REGISTRATION_FIELDS,
          ...Object.keys(MIDDLEWARE_FIELDS),
        ]);
        const repository = runtime.config.modelRepository;
        if (repository === undefined)
          throw new BatchlineError(
            'BAD_MODEL_PATH',
            'this server was started without --model-repository; the admin API loads files only from one',
          );
        const field = 'module' in fields ? 'module' : 'path';
        const path = await modelFileInRepository(repository, fields[field], field);
        const given = own.functionName; // checked by parseModelOptions
        if (given !== undefined) {
          if (!isCodeModelPath(path))
            throw new BatchlineError(
              'INVALID_MODEL_CONFIG',
              'request body: function names an export of a code model (.mjs)',
            );
        }
        const latencyProfile =
          own.options.latencyProfile === undefined
            ? {}
            : { latencyProfile: await profileInRepository(repository, own.options.latencyProfile) };
        const existing = fields.version === undefined ? undefined : runtime.registry.resolve(name, version);
        if (existing !== undefined) throw versionExists(existing);
        // Flags, then the model's config.json in the repository (when it has one), then the request.
        const fromRepository = await readRepositoryModelConfig(repository, name);
        // A profile the registration inherits is checked before the load too, named as its config.json's.
        const inherited = fromRepository.options.latencyProfile;
        if (own.options.latencyProfile === undefined && inherited !== undefined)
          await readModelLatencyProfile(inherited, `${name}/config.json: latency_profile`);
        const config = effectiveConfig(
          effectiveConfig(runtime.config, fromRepository.options, `${name}/config.json`),
          { ...own.options, ...latencyProfile },
          'request body',
        );
        // The log names each option as it was written: the request's field (the middleware's name
        // when it used one), else the model's config.json field.
        const middlewareName = (key: string): string | undefined =>
          Object.entries(MIDDLEWARE_FIELDS).find(
            ([theirs, { option }]) => option === key && theirs in (body as object),
          )?.[0];
        const optionSources = {
          ...optionSourcesOf(fromRepository.options, join(repository, name, 'config.json'), snakeCase),
          ...optionSourcesOf(own.options, REGISTRATION_BODY, (key) => middlewareName(key) ?? snakeCase(key)),
        };
        // The request's parameters over the config.json's, each by its name, as the options are.
        const parameters = { ...fromRepository.parameters, ...own.parameters };
        // The export the request names, else the config.json's (a module of another version may not have it: its load says so).
        const functionName = given ?? fromRepository.functionName;
        // The labels file the request names, else the config.json's, as a load from the repository takes it.
        const labelFilename = own.labelFilename ?? fromRepository.labelFilename;
        const labels =
          labelFilename === undefined
            ? {}
            : { labelsPath: await labelsFileInRepository(repository, name, labelFilename) };
        // Without one asked for, the next version is the one after the highest there is now, at
        // the registration: chosen before the awaits, several at once were all told 409 for
        // a version none of them named.
        if (fields.version === undefined) version = versionOf(undefined, runtime, name);
        const registered = await runtime.register(
          {
            name,
            version,
            path,
            config,
            optionSources,
            parameters,
            ...labels,
            ...(functionName === undefined ? {} : { functionName }),
          },
          wait,
        );
        // What the log warns of, for a caller that never reads it. Always there, empty when nothing
        // is wrong: a script reads one shape. Decided by the options, and by whether the model
        // batches by cost (itemCost), which only its load says: before it ("wait": false), a code
        // model's queue_below_batch is left to the log's line, said once it has loaded.
        const undecided = registered.state === 'loading' && isCodeModelPath(path);
        const warnings = registrationWarnings(registered, repository).filter(
          (warning) => !(undecided && warning.code === 'queue_below_batch'),
        );
        if (!wait) {
          reply.header('location', `/v1/models/${name}/versions/${version}`);
          return json(reply, 202, { name, version, state: registered.status.state, warnings });
        }
        json(reply, 201, { ...versionMetadata(registered, repository), warnings });
      } catch (error) {
        refuse(reply, error);
      }
    });

    // The middleware's API removes one named version (DELETE /admin/models/{name}/{version}): a
    // version left out, or empty, must mean neither the latest nor every version, but a 400 that says so.
    // So does a PATCH's (TorchServe's PUT /models/{name}?min_worker=N names none): it changes one version.
    const nameTheVersion = (name: string, verb: 'DELETE' | 'PATCH' = 'DELETE'): BatchlineError => {
      const versions = runtime.registry.versionsOf(name).map((v) => v.version);
      return new BatchlineError(
        'BAD_REQUEST',
        `name the version to ${verb === 'DELETE' ? 'remove' : 'change'}: ${verb} /admin/models/${name}/{version} (${versions.length === 0 ? `there is no model '${name}'` : `${name}'s versions: ${versions.join(', ')}`})`,
      );
    };
    scope.delete('/admin/models/:name', (request, reply) =>
      refuse(reply, nameTheVersion((request.params as { name: string }).name)),
    );
    scope.patch('/admin/models/:name', (request, reply) =>
      refuse(reply, nameTheVersion((request.params as { name: string }).name, 'PATCH')),
    );

    // TorchServe's PUT /models/{name}?min_worker=N, Ray Serve's num_replicas: the same version, its queue, stats and metrics series.
    scope.patch('/admin/models/:name/:version', async (request, reply) => {
      const { name, version } = request.params as { name: string; version: string };
      try {
        if (version === '') throw nameTheVersion(name, 'PATCH');
        const changes = liveChanges(request.body);
        const found = runtime.targets.find({ name, version });
        if (found instanceof BatchlineError) throw found;
        if (changes.maxBatchSize !== undefined && found.batcher !== undefined && found.model.itemCost === undefined) {
          // Past 4096 only a version that batches by cost (itemCost) takes.
          const refusal = itemBatchSizeRefusal(changes as { maxBatchSize: number }, {
            maxBatchSize: { name: 'max_batch_size', source: REGISTRATION_BODY },
          });
          if (refusal !== undefined) throw refusal;
        }
        await found.reconfigure(changes);
        // Its warnings name a changed value as the PATCH wrote it (the middleware's name when it sent that).
        const sentAs = (key: string): string =>
          Object.entries(MIDDLEWARE_FIELDS).find(
            ([theirs, { option }]) => option === key && theirs in (request.body as object),
          )?.[0] ?? snakeCase(key);
        found.optionSources = { ...found.optionSources, ...optionSourcesOf(changes, PATCH_BODY, sentAs) };
        runtime.log(
          `batchline serve: ${versionKey(name, found.version)} changed by PATCH: ${Object.entries(changes)
            .map(([key, value]) => `${snakeCase(key)}=${value}`)
            .join(' ')}`,
        );
        // What a registration's answer and the log warn of, for the settings the version has now.
        for (const line of versionWarningLines(found)) runtime.log(line);
        const repository = runtime.config.modelRepository;
        json(reply, 200, { ...versionMetadata(found, repository), warnings: registrationWarnings(found, repository) });
      } catch (error) {
        refuse(reply, error);
      }
    });

    scope.delete('/admin/models/:name/:version', async (request, reply) => {
      const { name, version } = request.params as { name: string; version: string };
      const found = version === '' ? nameTheVersion(name) : runtime.targets.find({ name, version });
      if (found instanceof BatchlineError) return refuse(reply, found);
      // One being removed already is answered with that removal, as a Triton unload racing it is
      // (it was 503 "already being removed", which the refusals did not list).
      await runtime.deregister(found);
      json(reply, 200, { name, version: found.version, state: 'removed' });
    });
  });
}

/** The version a registration asks for, or the next after the highest there is (1 for a new model). */
function versionOf(given: unknown, runtime: ServingRuntime, name: string): number {
  if (given === undefined) return (runtime.registry.versionsOf(name)[0]?.version ?? 0) + 1;
  if (typeof given === 'number' && Number.isInteger(given) && given >= 1 && given <= 999_999_999) return given;
  const number = typeof given === 'string' ? parseVersion(given) : undefined;
  if (typeof number === 'number') return number;
  throw new BatchlineError(
    'INVALID_MODEL_CONFIG',
    `request body: version: got ${JSON.stringify(given)}, expected an integer from 1 to 999999999 (or "v2")`,
  );
}

/**
 * A registration's `latency_profile`: in the repository, and a profile, checked before the load,
 * so that a bad one is refused naming the body's field and the path it gave (it was
 * `invalid_option: --latency-profile` with the server's absolute path).
 */
async function profileInRepository(repository: string, given: string): Promise<string> {
  const path = await profileFileInRepository(repository, given);
  await readModelLatencyProfile(path, 'request body: latency_profile', given);
  return path;
}
