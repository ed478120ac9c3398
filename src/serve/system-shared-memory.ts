import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BatchlineError } from '../errors.js';
import { clipped } from '../message-text.js';
import { asJsonText } from '../model/json-numbers.js';
import type { SharedMemoryAccess, SharedMemoryRef } from '../protocol/shared-memory-parameters.js';

/** Where POSIX shared memory objects are files on Linux: `shm_open("/name")` is `/dev/shm/name`. */
export const SHM_DIR = '/dev/shm';

/** A POSIX shared memory name: an optional leading slash, then one path component (no '/', no NUL). */
const SHM_KEY = /^\/?[^/\0]{1,255}$/;
/** A region's name: printable ASCII without '/' (it is a path segment of the routes). */
const REGION_NAME = /^[\x21-\x2e\x30-\x7e]{1,128}$/;

/** A registered region, as `status` answers it. */
export interface RegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byte_size: number;
}

/**
 * Triton's system shared memory extension: regions a client registers by the POSIX shared memory
 * name (`key`) of an object it made, an `offset` into it and a `byte_size`. Node has no mmap,
 * so each use opens the object's file under /dev/shm and reads or writes it with positioned
 * I/O: the same pages the client mapped, at a system call and a copy instead of a mapping (the
 * figures are in docs/lab/2026-12-03-triton-extras.md). Holding no descriptor between uses, a
 * region unregistered or a file removed while a request is in flight fails that request's read
 * or write cleanly instead of writing through a descriptor number since reused. Only files
 * directly in /dev/shm are opened, never through a symbolic link (O_NOFOLLOW), never a folder.
 * Messages are Triton's (shared_memory_manager.cc) where it has one.
 */
export class SystemSharedMemory implements SharedMemoryAccess {
  private readonly regions = new Map<string, RegionStatus>();

  constructor(private readonly dir: string = SHM_DIR) {}

  /** Every region (`name` undefined) or the one named. */
  status(name?: string): RegionStatus[] {
    if (name === undefined) return [...this.regions.values()];
    const region = this.regions.get(name);
    if (region === undefined) throw notFound(`Unable to find system shared memory region: '${name}'`);
    return [region];
  }

  /** Registers region `name` from a register request's body (`key`, `offset`, `byte_size`). */
  register(name: string | undefined, body: unknown): void {
    if (name === undefined || name === '')
      throw refused("'region name' is necessary to register system shared memory region");
    if (!REGION_NAME.test(name))
      throw refused(
        `cannot register shared memory region '${clipped(name)}': a region's name is 1 to 128 printable ASCII characters, without '/'`,
      );
    const request =
      typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    if (request.key === undefined) throw refused("Shared memory register request has no 'key' field");
    if (typeof request.key !== 'string')
      throw refused(`Unable to parse 'key': a string, got ${asJsonText(request.key)}`);
    const key = request.key;
    const offset = request.offset === undefined ? 0 : byteCount(request.offset, 'offset');
    if (request.byte_size === undefined) throw refused("Shared memory register request has no 'byte_size' field");
    const byteSize = byteCount(request.byte_size, 'byte_size');
    if (!SHM_KEY.test(key) || key.replace(/^\//, '') === '.' || key.replace(/^\//, '') === '..')
      throw refused(
        `cannot register shared memory region '${name}' - invalid shm key '${clipped(key)}': a POSIX shared memory name, such as '/input_data' (one name under ${this.dir})`,
      );
    if (this.regions.has(name))
      throw new BatchlineError('SHARED_MEMORY_EXISTS', `shared memory region '${name}' already in manager`);
    let fileSize: number;
    try {
      fileSize = this.withFile(key, constants.O_RDONLY, () => undefined);
    } catch (error) {
      throw error instanceof BatchlineError ? refused(error.detail) : error;
    }
    if (offset + byteSize > fileSize) throw refused(`failed to register shared memory region '${name}': invalid args`);
    this.regions.set(name, { name, key, offset, byte_size: byteSize });
  }

  /** Unregisters region `name`, or every region; a name not registered is no error, as in Triton. */
  unregister(name?: string): void {
    if (name === undefined) this.regions.clear();
    else this.regions.delete(name);
  }

  check(ref: SharedMemoryRef): void {
    this.located(ref);
  }

  read(ref: SharedMemoryRef): Buffer {
    const { region, at } = this.located(ref);
    const bytes = Buffer.allocUnsafe(ref.byteSize);
    this.withFile(
      region.key,
      constants.O_RDONLY,
      (fd) => {
        for (let done = 0; done < bytes.length; ) {
          const read = readSync(fd, bytes, done, bytes.length - done, at + done);
          if (read === 0) throw refused(`Invalid shared memory region: '${region.key}'`); // shrank since
          done += read;
        }
      },
      at + ref.byteSize,
    );
    return bytes;
  }

  write(ref: SharedMemoryRef, parts: readonly Uint8Array[]): void {
    const { region, at } = this.located(ref);
    this.withFile(
      region.key,
      constants.O_WRONLY,
      (fd) => {
        let position = at;
        for (const part of parts)
          for (let done = 0; done < part.byteLength; ) {
            const written = writeSync(fd, part, done, part.byteLength - done, position);
            done += written;
            position += written;
          }
      },
      at + ref.byteSize,
    );
  }

  /** The region a reference names and where its bytes start in the file, checked as Triton's GetMemoryInfo checks them. */
  private located(ref: SharedMemoryRef): { region: RegionStatus; at: number } {
    const region = this.regions.get(ref.region);
    if (region === undefined) throw notFound(`Unable to find shared memory region: '${ref.region}'`);
    if (ref.offset >= region.byte_size) throw badInput(`Invalid offset for shared memory region: '${ref.region}'`);
    if (ref.offset + ref.byteSize > region.byte_size)
      throw badInput(`Invalid offset + byte size for shared memory region: '${ref.region}'`);
    return { region, at: region.offset + ref.offset };
  }

  /**
   * Opens the object `key` (a regular file directly under the folder, not through a link), runs
   * `use` with its descriptor, closes it, and returns its size. With `needBytes`, a file smaller
   * than that (truncated since it was registered) is refused before `use`.
   */
  private withFile<T>(key: string, mode: number, use: (fd: number) => T, needBytes = 0): number {
    let fd: number;
    try {
      fd = openSync(join(this.dir, key.replace(/^\//, '')), mode | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      throw badInput(`Unable to open shared memory region: '${key}'`);
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile() || stat.size < needBytes) throw badInput(`Invalid shared memory region: '${key}'`);
      use(fd);
      return stat.size;
    } finally {
      closeSync(fd);
    }
  }
}

function byteCount(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw refused(`Unable to parse '${name}': a whole number of bytes, got ${asJsonText(value)}`);
  return value;
}

/** A register, unregister or status call refused (Triton's words, no prefix). */
function refused(detail: string): BatchlineError {
  return new BatchlineError('BAD_SHARED_MEMORY', detail);
}

/**
 * A region not registered, named by a status call or a request: NOT_FOUND over gRPC and 404 on
 * HTTP, as Triton's shared memory manager answers it (and counted with the bad inputs).
 */
function notFound(detail: string): BatchlineError {
  return new BatchlineError('SHARED_MEMORY_NOT_FOUND', detail);
}

/** An inference request whose region reference is wrong: a bad input, as its other faults are. */
function badInput(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
