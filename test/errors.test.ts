import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpcJs from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import {
  BatchlineError,
  ERROR_TABLE,
  errorBody,
  errorRow,
  missingRuntime,
  REJECTION_REASONS,
  type ErrorCode,
} from '../src/errors.js';
import { GRPC_STATUS, type GrpcStatusName } from '../src/grpc-status.js';

const srcDir = fileURLToPath(new URL('../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/**
 * Every row as it must be: HTTP status, gRPC status, exit code, metrics reason, Retry-After
 * seconds. Typed
 * by ErrorCode, so a new row does not compile until it has its line here.
 */
const EXPECTED: Record<
  ErrorCode,
  [status: number, grpc: GrpcStatusName, exit: number, reason: string | undefined, retryAfterS: number | undefined]
> = {
  INVALID_OPTION: [400, 'INVALID_ARGUMENT', 2, undefined, undefined],
  INVALID_ARGUMENT: [400, 'INVALID_ARGUMENT', 2, undefined, undefined],
  INVALID_MODEL_CONFIG: [400, 'INVALID_ARGUMENT', 2, undefined, undefined],
  BAD_JSON: [400, 'INVALID_ARGUMENT', 1, 'bad_json', undefined],
  BAD_MSGPACK: [400, 'INVALID_ARGUMENT', 1, 'bad_msgpack', undefined],
  BAD_INPUT: [400, 'INVALID_ARGUMENT', 1, 'bad_input', undefined],
  BAD_HEADER: [400, 'INVALID_ARGUMENT', 1, 'bad_input', undefined],
  BAD_SHARED_MEMORY: [400, 'INVALID_ARGUMENT', 1, undefined, undefined],
  SHARED_MEMORY_EXISTS: [400, 'ALREADY_EXISTS', 1, undefined, undefined],
  SHARED_MEMORY_NOT_FOUND: [404, 'NOT_FOUND', 1, 'bad_input', undefined],
  BAD_REQUEST: [400, 'INVALID_ARGUMENT', 1, 'bad_request', undefined],
  REQUEST_TIMEOUT: [408, 'DEADLINE_EXCEEDED', 1, undefined, undefined],
  EXPECTATION_FAILED: [417, 'INVALID_ARGUMENT', 1, undefined, undefined],
  MISDIRECTED_REQUEST: [421, 'PERMISSION_DENIED', 1, undefined, undefined],
  HEADERS_TOO_LARGE: [431, 'RESOURCE_EXHAUSTED', 1, undefined, undefined],
  NOT_IMPLEMENTED: [501, 'UNIMPLEMENTED', 1, undefined, undefined],
  NOT_FOUND: [404, 'UNIMPLEMENTED', 1, undefined, undefined],
  MODEL_NOT_FOUND: [404, 'NOT_FOUND', 1, 'model_not_found', undefined],
  VERSION_EXISTS: [409, 'ALREADY_EXISTS', 2, undefined, undefined],
  VERSION_BUSY: [409, 'FAILED_PRECONDITION', 1, undefined, undefined],
  VERSION_REMOVED: [409, 'ABORTED', 1, undefined, undefined],
  MODEL_UNAVAILABLE: [503, 'UNAVAILABLE', 1, 'model_unavailable', undefined],
  PAYLOAD_TOO_LARGE: [413, 'RESOURCE_EXHAUSTED', 1, 'payload_too_large', undefined],
  UNSUPPORTED_MEDIA_TYPE: [415, 'UNIMPLEMENTED', 1, 'unsupported_media_type', undefined],
  QUEUE_FULL: [429, 'RESOURCE_EXHAUSTED', 1, 'queue_full', 1],
  OVER_SLA: [429, 'RESOURCE_EXHAUSTED', 1, 'over_sla', 1],
  CIRCUIT_OPEN: [503, 'UNAVAILABLE', 1, 'circuit_open', 1],
  NOT_READY: [503, 'UNAVAILABLE', 1, 'not_ready', undefined],
  SHUTTING_DOWN: [503, 'UNAVAILABLE', 1, 'shutting_down', undefined],
  TOO_MANY_CONNECTIONS: [503, 'UNAVAILABLE', 1, undefined, undefined],
  UNHEALTHY: [503, 'UNAVAILABLE', 1, undefined, undefined],
  DEADLINE_EXCEEDED: [504, 'DEADLINE_EXCEEDED', 1, undefined, undefined],
  MODEL_FAILURE: [500, 'INTERNAL', 1, undefined, undefined],
  INPUT_NOT_FOUND: [404, 'NOT_FOUND', 1, undefined, undefined],
  UNPROCESSABLE_INPUT: [422, 'INVALID_ARGUMENT', 1, undefined, undefined],
  OUTPUT_TOO_LARGE: [500, 'RESOURCE_EXHAUSTED', 1, undefined, undefined],
  MODEL_LOAD_FAILED: [422, 'INVALID_ARGUMENT', 1, undefined, undefined],
  UNAUTHORIZED: [401, 'UNAUTHENTICATED', 1, undefined, undefined],
  FORBIDDEN: [403, 'PERMISSION_DENIED', 1, undefined, undefined],
  BAD_MODEL_PATH: [400, 'INVALID_ARGUMENT', 1, undefined, undefined],
  ADDRESS_IN_USE: [500, 'INTERNAL', 1, undefined, undefined],
  CANNOT_LISTEN: [500, 'INTERNAL', 1, undefined, undefined],
  RUNTIME_NOT_INSTALLED: [500, 'INTERNAL', 1, undefined, undefined],
  EXECUTION_PROVIDER_UNAVAILABLE: [422, 'INVALID_ARGUMENT', 2, undefined, undefined],
  INTERNAL: [500, 'INTERNAL', 1, 'internal', undefined],
};

describe('the error table', () => {
  it('has exactly the expected rows', () => {
    expect(Object.keys(ERROR_TABLE).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(Object.entries(EXPECTED) as [ErrorCode, (typeof EXPECTED)[ErrorCode]][])(
    '%s',
    (code, [status, grpc, exit, reason, retryAfterS]) => {
      const error = new BatchlineError(code, 'DETAIL');
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe('BatchlineError');
      expect(error.code).toBe(code);
      expect(error.httpStatus).toBe(status);
      expect(error.row.grpcStatus).toBe(grpc);
      expect(error.grpcCode).toBe(GRPC_STATUS[grpc]);
      expect(error.grpcCode).toBe(grpcJs.status[grpc]);
      expect(error.exitCode).toBe(exit);
      expect(error.row).toBe(errorRow(code));
      expect(error.row.reason).toBe(reason);
      expect(error.row.retryAfterS).toBe(retryAfterS);
      // The detail fills the template's one placeholder, if it has one.
      const template = errorRow(code).message;
      expect(template.split('%s').length, code).toBeLessThanOrEqual(2);
      expect(error.message).toBe(template.replace('%s', 'DETAIL'));
      expect(error.detail).toBe('DETAIL');
      expect(errorBody(code, error.message)).toEqual({ error: { code: code.toLowerCase(), message: error.message } });
    },
  );

  it("numbers gRPC's status codes as grpc-js does", () => {
    expect(GRPC_STATUS).toStrictEqual(
      Object.fromEntries(Object.entries(grpcJs.status).filter(([name]) => Number.isNaN(Number(name)))),
    );
  });

  it('lists every metrics reason once, for the metrics to export at 0', () => {
    const reasons = Object.values(EXPECTED).flatMap(([, , , reason]) => (reason === undefined ? [] : [reason]));
    expect([...REJECTION_REASONS].sort()).toEqual([...new Set(reasons)].sort());
  });

  it('agrees with its uses: every row is raised somewhere and every raised code is a row', () => {
    const source = sourceFiles(srcDir)
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    const used = new Set([...source.matchAll(/BatchlineError\(\s*'([A-Z_]+)'/g)].map((m) => m[1]));
    // Codes chosen at run time from a mapping (Fastify's codes in classify.ts, `code: 'X'`).
    // Not errors: the code of a Node warning batch() emits (process.emitWarning).
    const warnings = new Set([
      'BATCHLINE_QUEUE_BELOW_BATCH',
      'BATCHLINE_DEADLINE_WITHIN_WINDOW',
      'BATCHLINE_TARGET_WITHOUT_POLICY',
    ]);
    for (const m of source.matchAll(/(?:code: |FST_ERR_[A-Z_]+: )'([A-Z_]+)'/g))
      if (!warnings.has(m[1]!)) used.add(m[1]);
    for (const code of used) expect(Object.keys(ERROR_TABLE)).toContain(code);
    for (const code of Object.keys(ERROR_TABLE)) expect(used, `${code} is never used`).toContain(code);
  });

  it('names the fix when onnxruntime-node is missing, and only then', () => {
    const notFound = (name: string) =>
      Object.assign(new Error(`Cannot find package '${name}' imported from /x/onnx-model.js`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    const error = missingRuntime(notFound('onnxruntime-node'), '2.3.4');
    expect(error?.code).toBe('RUNTIME_NOT_INSTALLED');
    // batchline is not on the registry: the command names the tarball (README, "Install"), of its version.
    expect(error?.message).toContain('ONNXRUNTIME_NODE_INSTALL=skip npm install path/to/batchline-2.3.4.tgz');
    expect(missingRuntime(notFound('fastify'), '2.3.4')).toBeUndefined();
    expect(missingRuntime(new Error("Cannot find package 'onnxruntime-node'"), '2.3.4')).toBeUndefined();
  });
});
