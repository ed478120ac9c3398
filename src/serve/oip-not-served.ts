import type { ServeConfig } from '../options/serve.js';

/** Paths of Triton's HTTP extensions that batchline does not serve, and what to say instead of a bare "not found". */
const NOT_SERVED: readonly (readonly [RegExp, string])[] = [
  [/^\/v2(\/models\/[^/]+(\/versions\/[^/]+)?)?\/trace\//, "Triton's trace extension is not served"],
  [/^\/v2\/logging$/, "Triton's logging extension is not served"],
  [
    /^\/v2\/cudasharedmemory\//,
    "Triton's CUDA shared memory extension is not served (batchline runs models on CPUs); system shared memory is, with --allow-client-shm",
  ],
  [/^\/v2\/models\/[^/]+(\/versions\/[^/]+)?\/generate(_stream)?$/, "Triton's generate extension is not served"],
];

/**
 * Why a `/v2` path that has no route here is not served, when it is one of Triton's extensions
 * (tritonclient's `get_log_settings`, `load_model` on a server without the admin API…),
 * or undefined for any other path. A client of Triton reads the reason instead of a 404 that
 * looks like a wrong URL.
 */
export function notServedReason(
  path: string,
  config: Pick<ServeConfig, 'adminToken' | 'adminPort' | 'modelRepository' | 'allowClientShm'>,
): string | undefined {
  if (path.startsWith('/v2/systemsharedmemory/') && !config.allowClientShm)
    return "Triton's system shared memory extension is off: serve with --allow-client-shm";
  if (path.startsWith('/v2/repository/')) return repositoryExtensionRefusal(config);
  return NOT_SERVED.find(([pattern]) => pattern.test(path))?.[1];
}

/**
 * Why Triton's model repository extension is not served on the main listener (HTTP's, and so
 * gRPC's), or undefined when it is: it is the admin API's, which needs a token and a repository,
 * and which --admin-port moves to a listener of its own (over HTTP only).
 */
export function repositoryExtensionRefusal(
  config: Pick<ServeConfig, 'adminToken' | 'adminPort' | 'modelRepository'>,
): string | undefined {
  if (!servesRepositoryExtension(config))
    return "Triton's model repository extension is part of the admin API: serve with --admin-token and --model-repository";
  if (config.adminPort !== 0)
    return `Triton's model repository extension is on the admin API's listener (--admin-port ${config.adminPort})`;
  return undefined;
}

/** Whether Triton's model repository extension is served: with the admin API and a repository to load from. */
export function servesRepositoryExtension(config: Pick<ServeConfig, 'adminToken' | 'modelRepository'>): boolean {
  return config.adminToken !== undefined && config.modelRepository !== undefined;
}
