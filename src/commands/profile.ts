import { Command } from 'commander';
import { BatchlineError } from '../errors.js';
import { PROFILE_OPTIONS } from '../options/profile.js';
import { withOptionsAsGiven } from '../options/named-as-given.js';
import { addOptions } from '../options/command-flags.js';
import { resolveOptions } from '../options/schema.js';

/**
 * `batchline profile`: measures a model's execution time per batch size, so `simulate` can
 * start from facts. onnxruntime is loaded only when it runs.
 */
export function makeProfileCommand(): Command {
  const command = new Command('profile').description(
    "Measure a model's execution time per batch size, fit a + b·n, and write a profile for simulate --latency-profile.",
  );
  addOptions(command, PROFILE_OPTIONS);
  command.addHelpText(
    'after',
    '\nExample:\n  batchline profile --batch-sizes 1,2,4,8,16,32 --out profile.json\n  batchline simulate --latency-profile profile.json --rate 2000',
  );
  command.action((raw: Record<string, unknown>) =>
    withOptionsAsGiven(PROFILE_OPTIONS, raw, async () => {
      const options = resolveOptions(PROFILE_OPTIONS, raw);
      // Only a model file is served over HTTP to measure it: without one the flag did nothing, silently.
      if (raw.serveDuration !== undefined && options.serveDuration > 0 && options.model === undefined)
        throw new BatchlineError(
          'INVALID_OPTION',
          '--serve-duration: applies with --model (a model file, which a real serve answers over HTTP to measure); the embedded model is not measured that way',
        );
      const { profileMain, parseBatchSizes } = await import('./profile-main.js');
      parseBatchSizes(options.batchSizes); // validate before loading the model
      await profileMain({ options, stdout: process.stdout });
    }),
  );
  return command;
}
