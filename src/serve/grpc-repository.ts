import type { Metadata } from '@grpc/grpc-js';
import { BatchlineError } from '../errors.js';
import { AdminToken } from './admin-token.js';
import { repositoryExtensionRefusal } from './oip-not-served.js';
import { loadRepositoryModel, repositoryIndex, unloadRepositoryModel } from './repository-extension.js';
import type { ServingRuntime } from './serving-runtime.js';

/** The metadata that carries the admin token, as HTTP's header does: `authorization: Bearer <token>`. */
export const ADMIN_TOKEN_METADATA = 'authorization';

/** A `ModelRepositoryParameter` as decoded with its oneof named (`parameter_choice`). */
interface RepositoryParameter {
  readonly parameter_choice?: string;
  readonly bool_param?: boolean;
}

interface IndexMessage {
  readonly repository_name: string;
  readonly ready: boolean;
}

interface ModelMessage {
  readonly repository_name: string;
  readonly model_name: string;
  readonly parameters: Readonly<Record<string, RepositoryParameter>>;
}

/** What each of Triton's `Repository*` calls answers, from its decoded request and the call's metadata. */
export interface RepositoryCalls {
  index(request: IndexMessage, metadata: Metadata): Promise<object>;
  load(request: ModelMessage, metadata: Metadata): Promise<object>;
  unload(request: ModelMessage, metadata: Metadata): Promise<object>;
}

/**
 * Triton's model repository calls of `grpc_service.proto` (RepositoryIndex, RepositoryModelLoad,
 * RepositoryModelUnload), with the semantics and refusals of `/v2/repository/…`
 * (repository-extension.ts), behind the same admin token in `authorization` metadata (Triton's
 * `--grpc-restricted-protocol=model-repository:KEY=VALUE` guards them with a header the operator
 * names). Not served (UNIMPLEMENTED, saying why) without --admin-token and --model-repository, and
 * with --admin-port, which keeps the admin API off the main listeners. As Triton's server: a
 * `repository_name` is UNIMPLEMENTED, `unload_dependents` must be a `bool_param`.
 */
export function repositoryCalls(runtime: ServingRuntime): RepositoryCalls {
  const token = runtime.config.adminToken === undefined ? undefined : new AdminToken(runtime.config.adminToken);
  const guard = (method: string, metadata: Metadata, repositoryName: string): void => {
    const notServed = repositoryExtensionRefusal(runtime.config);
    if (notServed !== undefined || token === undefined)
      throw new BatchlineError('NOT_FOUND', `${method}: ${notServed ?? 'no admin token'}`);
    const refusal = token.refusal(metadata.get(ADMIN_TOKEN_METADATA)[0], `metadata ${ADMIN_TOKEN_METADATA}`);
    if (refusal !== undefined) throw refusal;
    // Triton's words: it serves one repository, named by its flags.
    if (repositoryName !== '')
      throw new BatchlineError('NOT_FOUND', `${method}: 'repository_name' specification is not supported`);
  };
  return {
    index: async (request, metadata) => {
      guard('RepositoryIndex', metadata, request.repository_name);
      return { models: await repositoryIndex(runtime, request.ready) };
    },
    load: async (request, metadata) => {
      guard('RepositoryModelLoad', metadata, request.repository_name);
      await loadRepositoryModel(runtime, request.model_name, Object.keys(request.parameters));
      return {};
    },
    unload: async (request, metadata) => {
      guard('RepositoryModelUnload', metadata, request.repository_name);
      const dependents = request.parameters.unload_dependents;
      // Batchline has no ensembles, so there are no dependents to unload; the type is checked as Triton checks it.
      if (dependents !== undefined && dependents.parameter_choice !== 'bool_param')
        throw new BatchlineError(
          'BAD_REQUEST',
          "invalid value type for 'unload_dependents' parameter, expected bool_param.",
        );
      await unloadRepositoryModel(runtime, request.model_name);
      return {};
    },
  };
}
