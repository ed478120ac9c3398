import { BatchlineError } from '../errors.js';
import { CLIENT_SHM_DISABLED } from '../protocol/shared-memory-parameters.js';
import type { RegionStatus, SystemSharedMemory } from './system-shared-memory.js';

interface NameMessage {
  readonly name: string;
}

interface RegisterMessage extends NameMessage {
  readonly key: string;
  readonly offset: number;
  readonly byte_size: number;
}

/** What each of Triton's `SystemSharedMemory*` calls answers, from its decoded request. */
export interface SharedMemoryCalls {
  status(request: NameMessage): { regions: Record<string, RegionStatus> };
  register(request: RegisterMessage): object;
  unregister(request: NameMessage): object;
}

/**
 * Triton's system shared memory calls of `grpc_service.proto` on the server's regions, the same
 * registry as `/v2/systemsharedmemory` (a region registered over one protocol is used by the
 * other). As Triton's gRPC server: an empty `name` is every region (status, unregister); without
 * `--allow-client-shm` (`sharedMemory` undefined), status lists no region and register and
 * unregister answer UNIMPLEMENTED in Triton's words. A refusal is in Triton's words with its
 * status: NOT_FOUND for a region not registered, ALREADY_EXISTS for a name registered twice,
 * INVALID_ARGUMENT for the rest (where Triton says INTERNAL for a key it cannot open, a client's mistake).
 */
export function sharedMemoryCalls(sharedMemory: SystemSharedMemory | undefined): SharedMemoryCalls {
  const nameOrAll = (name: string): string | undefined => (name === '' ? undefined : name);
  const enabled = (method: string): SystemSharedMemory => {
    if (sharedMemory === undefined) throw new BatchlineError('NOT_FOUND', `${method}: ${CLIENT_SHM_DISABLED}`);
    return sharedMemory;
  };
  return {
    status: (request) => {
      const regions =
        sharedMemory === undefined ? noRegion(request.name) : sharedMemory.status(nameOrAll(request.name));
      return { regions: Object.fromEntries(regions.map((region) => [region.name, region])) };
    },
    register: (request) => {
      const { name, key, offset, byte_size } = request;
      enabled('SystemSharedMemoryRegister').register(name, { key, offset, byte_size });
      return {};
    },
    unregister: (request) => {
      enabled('SystemSharedMemoryUnregister').unregister(nameOrAll(request.name));
      return {};
    },
  };
}

/** A server that takes no client shared memory has no region: every one, none; one named, not found. */
function noRegion(name: string): RegionStatus[] {
  if (name === '') return [];
  throw new BatchlineError('SHARED_MEMORY_NOT_FOUND', `Unable to find system shared memory region: '${name}'`);
}
