import { BatchlineError } from '../errors.js';
import { asJsonText } from '../model/json-numbers.js';

/** Where a tensor lies in a registered system shared memory region: Triton's three parameters. */
export interface SharedMemoryRef {
  readonly region: string;
  /** From the start of the region (not of its file). */
  readonly offset: number;
  readonly byteSize: number;
}

/**
 * The server's registered regions, as the decoders and encoders use them (the registry itself,
 * its files and its routes are serve's: serve/system-shared-memory.ts). Every method throws
 * BAD_INPUT in Triton's words when the region is unknown or the bytes lie outside it.
 */
export interface SharedMemoryAccess {
  /** The `byteSize` bytes at `offset` of the region, copied. */
  read(ref: SharedMemoryRef): Buffer;
  /** Checks that the region is registered and holds `offset` and `byteSize`. */
  check(ref: SharedMemoryRef): void;
  /** Writes `parts` one after the other at `offset` of the region (their total at most `byteSize`). */
  write(ref: SharedMemoryRef, parts: readonly Uint8Array[]): void;
}

/** Triton's words when a client's shared memory is not allowed (`--allow-client-shm`). */
export const CLIENT_SHM_DISABLED =
  "Client shared memory is disabled. Start the server with '--allow-client-shm' to enable.";

/**
 * An input's or output's `shared_memory_region`, `shared_memory_offset` (default 0) and
 * `shared_memory_byte_size` parameters, or undefined when it names no region. Refused as
 * Triton refuses them ("Unable to parse 'shared_memory_offset'"), and a region without its byte
 * size, which the protocol requires.
 */
export function sharedMemoryRefOf(parameters: Record<string, unknown>, what: string): SharedMemoryRef | undefined {
  const region = parameters.shared_memory_region;
  if (region === undefined) {
    for (const name of ['shared_memory_offset', 'shared_memory_byte_size'])
      if (parameters[name] !== undefined) throw bad(`${what}: '${name}' is given without 'shared_memory_region'`);
    return undefined;
  }
  if (typeof region !== 'string' || region === '')
    throw bad(`${what}: Unable to parse 'shared_memory_region': a region's name, got ${asJsonText(region)}`);
  const offset = byteCount(parameters.shared_memory_offset, 'shared_memory_offset', what) ?? 0;
  const byteSize = byteCount(parameters.shared_memory_byte_size, 'shared_memory_byte_size', what);
  if (byteSize === undefined) throw bad(`${what}: 'shared_memory_region' needs 'shared_memory_byte_size'`);
  return { region, offset, byteSize };
}

function byteCount(value: unknown, name: string, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw bad(`${what}: Unable to parse '${name}': a whole number of bytes, got ${asJsonText(value)}`);
  return value;
}

function bad(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
