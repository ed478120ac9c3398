/**
 * docs/api.md's error table and metrics reasons are the error table's (src/errors.ts): every code
 * a client can get from an inference route is there with its status, and the reasons listed for
 * batchline_rejections_total are exactly the ones exported.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLE, type ErrorCode, REJECTION_REASONS } from '../../src/errors.js';
import { ServeMetrics } from '../../src/serve/metrics.js';
import { BATCHING_WARNINGS } from '../../src/options/batching-warnings.js';
import { VERSION_WARNING_CODES } from '../../src/serve/version-log.js';
import { WARMUP_WARNINGS } from '../../src/serve/warmup-warnings.js';

const API = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'api.md'), 'utf8');

/** Codes that never answer a request to serve's routes: a command's exits, and the admin API's own (docs/models.md). */
const NOT_IN_THE_TABLE: ErrorCode[] = [
  'INVALID_OPTION',
  'INVALID_ARGUMENT',
  'INVALID_MODEL_CONFIG',
  'ADDRESS_IN_USE',
  'CANNOT_LISTEN',
  'RUNTIME_NOT_INSTALLED',
  'INTERNAL',
  'VERSION_EXISTS',
  'VERSION_REMOVED',
  'VERSION_BUSY',
  'MODEL_LOAD_FAILED',
  'EXECUTION_PROVIDER_UNAVAILABLE',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'BAD_MODEL_PATH',
];

describe('docs/api.md', () => {
  const table = API.slice(API.indexOf('<!-- error-codes:start -->'), API.indexOf('<!-- error-codes:end -->'));
  const rows = [...table.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => [m[2], Number(m[1])] as const);

  it('lists every error a request can get, with the status the error table gives it', () => {
    const expected = (Object.keys(ERROR_TABLE) as ErrorCode[])
      .filter((code) => !NOT_IN_THE_TABLE.includes(code))
      .map((code) => [code.toLowerCase(), ERROR_TABLE[code].httpStatus] as const);
    expect([...rows].sort()).toEqual([...expected].sort());
  });

  it("names exactly the error table's reasons for batchline_rejections_total", () => {
    const line = API.split('\n').find((l) => l.startsWith('| `batchline_rejections_total{reason}`')) ?? '';
    const cell = line.split('|')[3] ?? '';
    const listed = [...cell.replace(/\(.*\)/, '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    expect([...listed].sort()).toEqual([...REJECTION_REASONS].sort());
  });

  it('documents every batchline_* metric /metrics exports, and no other', async () => {
    const exported = (await new ServeMetrics(() => []).registry.getMetricsAsJSON())
      .map((metric) => metric.name)
      .filter((name) => name.startsWith('batchline_'));
    const table = API.slice(API.indexOf('## Metrics'), API.indexOf('### The same in JSON'));
    const documented = new Set(
      table
        .split('\n')
        .filter((line) => line.startsWith('| `batchline_'))
        .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`(batchline_[a-z_]+)/g)].map((m) => m[1]!)),
    );
    expect([...documented].sort()).toEqual([...new Set(exported)].sort());
  });
});

describe("a registration's warnings", () => {
  const MODELS = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'models.md'), 'utf8');
  const LIBRARY_SOURCE = ['batch.ts', 'batch-options.ts']
    .map((file) => readFileSync(join(import.meta.dirname, '..', '..', 'src', 'library', file), 'utf8'))
    .join('\n');

  it("are listed in docs/models.md's table and api.md's admin row, code by code", () => {
    const table = MODELS.slice(MODELS.indexOf('| code | when |'));
    const rows = [...table.slice(0, table.indexOf('\n\n')).matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(rows).toEqual([...VERSION_WARNING_CODES]);
    const adminRow = API.split('\n').find((line) => line.startsWith('| `GET /admin/models`')) ?? '';
    for (const code of VERSION_WARNING_CODES) expect(adminRow).toContain(`\`${code}\``);
  });

  it("are batch()'s warning codes in the answers' lower case, then the warmup's (serve's own)", () => {
    for (const code of BATCHING_WARNINGS) expect(LIBRARY_SOURCE).toContain(`'BATCHLINE_${code.toUpperCase()}'`);
    expect(VERSION_WARNING_CODES).toEqual([...BATCHING_WARNINGS, ...WARMUP_WARNINGS]);
  });
});
