import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addOptions } from '../../src/options/command-flags.js';
import { resolveOptions } from '../../src/options/schema.js';
import { MODEL_VERSION_OPTIONS } from '../../src/options/serve.js';

/** What `batchline serve` would resolve for `--pipeline`/`--hold-retries` from these arguments and env. */
function resolve(args: string[], env: NodeJS.ProcessEnv = {}): { pipeline: boolean; holdRetries: boolean } {
  const command = addOptions(new Command().exitOverride(), MODEL_VERSION_OPTIONS);
  command.parse(args, { from: 'user' });
  const { pipeline, holdRetries } = resolveOptions(MODEL_VERSION_OPTIONS, command.opts(), env);
  return { pipeline, holdRetries };
}

describe('a boolean option on by default (`--no-<flag>` turns it off)', () => {
  it('is on without a flag, and off with --no-<flag>', () => {
    expect(resolve([])).toEqual({ pipeline: true, holdRetries: true });
    expect(resolve(['--no-pipeline', '--no-hold-retries'])).toEqual({ pipeline: false, holdRetries: false });
  });

  it('reads its environment variable when no flag is given, and a flag wins over it', () => {
    expect(resolve([], { PIPELINE: 'false', HOLD_RETRIES: 'false' })).toEqual({ pipeline: false, holdRetries: false });
    expect(resolve(['--pipeline'], { PIPELINE: 'false' }).pipeline).toBe(true);
    expect(resolve(['--no-pipeline'], { PIPELINE: 'true' }).pipeline).toBe(false);
  });

  it('still takes the positive flag (`--pipeline`, from before it was the default), and keeps it out of --help', () => {
    expect(resolve(['--pipeline']).pipeline).toBe(true);
    const help = addOptions(new Command(), MODEL_VERSION_OPTIONS).helpInformation();
    expect(help).toContain('--no-pipeline');
    expect(help).not.toMatch(/--pipeline\b/);
  });
});
