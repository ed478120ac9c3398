/** A refusal made after the options resolved names the option as the user gave it (named-as-given.ts). */
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { namedAsGiven } from '../../src/options/named-as-given.js';
import type { OptionSchema } from '../../src/options/schema.js';

const SCHEMA = {
  modelRepository: {
    kind: 'string',
    flag: 'model-repository',
    env: 'MODEL_REPOSITORY',
    default: undefined,
    description: 'd',
  },
  host: { kind: 'string', flag: 'host', env: 'HOST', default: '127.0.0.1', description: 'd' },
  adminHost: { kind: 'string', flag: 'admin-host', default: undefined, description: 'd' },
} as const satisfies OptionSchema;

const refusal = (detail: string) => new BatchlineError('INVALID_OPTION', detail);
const messageOf = (error: unknown) => (error as Error).message;

describe('namedAsGiven', () => {
  it('names the environment variable of the option the message opens with, when only it was set', () => {
    const error = namedAsGiven(
      refusal('--model-repository: cannot read /x (ENOENT)'),
      SCHEMA,
      {},
      {
        MODEL_REPOSITORY: '/x',
      },
    );
    expect(messageOf(error)).toBe('invalid option MODEL_REPOSITORY (--model-repository): cannot read /x (ENOENT)');
    expect((error as BatchlineError).code).toBe('INVALID_OPTION');
    expect((error as BatchlineError).exitCode).toBe(2);
  });

  it('keeps the flag when the flag gave it, whatever the environment holds', () => {
    const error = refusal('--model-repository: cannot read /y (ENOENT)');
    expect(namedAsGiven(error, SCHEMA, { modelRepository: '/y' }, { MODEL_REPOSITORY: '/x' })).toBe(error);
  });

  it('leaves the flags a message names as hints, and options without a variable, as they are', () => {
    const hint = refusal("--admin-host: got 'a', but the admin API shares the main listener (--host) unless …");
    expect(namedAsGiven(hint, SCHEMA, { adminHost: 'a' }, { HOST: '0.0.0.0' })).toBe(hint);
    const opensWithHost = refusal('--host: got 0.0.0.0, which …');
    expect(messageOf(namedAsGiven(opensWithHost, SCHEMA, {}, { HOST: '0.0.0.0' }))).toBe(
      'invalid option HOST (--host): got 0.0.0.0, which …',
    );
  });

  it('names the variable that set the port of an address in use, or of one that cannot be listened on', () => {
    const ports = {
      port: { kind: 'int', flag: 'port', env: 'PORT', default: 8080, min: 0, max: 65_535, description: 'd' },
    } as const satisfies OptionSchema;
    const inUse = new BatchlineError('ADDRESS_IN_USE', '127.0.0.1:8080 (--port)');
    const named = namedAsGiven(inUse, ports, {}, { PORT: '8080' }) as BatchlineError;
    expect([named.code, named.exitCode, messageOf(named)]).toEqual([
      'ADDRESS_IN_USE',
      inUse.exitCode,
      '127.0.0.1:8080 (PORT (--port)) is already in use (another server? choose another port)',
    ]);
    expect(namedAsGiven(inUse, ports, { port: 8080 }, { PORT: '8080' })).toBe(inUse);
    const cannot = new BatchlineError('CANNOT_LISTEN', '10.9.9.9:8080 (--port): listen EADDRNOTAVAIL');
    expect(messageOf(namedAsGiven(cannot, ports, {}, { PORT: '8080' }))).toContain(
      '10.9.9.9:8080 (PORT (--port)): listen EADDRNOTAVAIL',
    );
  });

  it('passes other errors through', () => {
    const other = new BatchlineError('MODEL_NOT_FOUND', 'm');
    const plain = new Error('--model-repository: x');
    expect(namedAsGiven(other, SCHEMA, {}, { MODEL_REPOSITORY: '/x' })).toBe(other);
    expect(namedAsGiven(plain, SCHEMA, {}, { MODEL_REPOSITORY: '/x' })).toBe(plain);
  });
});
