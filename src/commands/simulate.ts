import { Command } from 'commander';
import { addOptions } from '../options/command-flags.js';
import { withOptionsAsGiven } from '../options/named-as-given.js';
import { resolveOptions } from '../options/schema.js';
import { SIMULATE_OPTIONS } from '../options/simulate.js';
import { commandLineOf, environmentOf } from '../report/html/command-line.js';

/**
 * `batchline simulate`: what-if tuning on the serving core, on a virtual clock. Thin: options
 * are validated here and the simulator is imported only when it runs, so `--help` stays light.
 */
export function makeSimulateCommand(): Command {
  const command = new Command('simulate').description(
    'Simulate dynamic batching on the same core as serve, on a virtual clock: latency, throughput and batch sizes for a load, or a sweep of configurations.',
  );
  addOptions(command, SIMULATE_OPTIONS);
  command.option(
    '--sweep <option=values...>',
    'run a grid, e.g. --sweep max-batch-size=1,2,4,8 batch-window-ms=0,2,5 (options: max-batch-size, batch-window-ms, max-queue-size, request-timeout-ms, instances, rate, model-latency-ms, latency-ms, latency-cv)',
  );
  command.addHelpText(
    'after',
    `
Examples:
  batchline simulate --rate 300
  batchline simulate --rate 600 --latency '5+2n' --max-batch-size 16 --json -
  batchline simulate --rate 300 --model-latency-ms 20 --duration 1m30s
  batchline simulate --rate 50 --requests 12 --events
  batchline simulate --rate 600 --latency '4+1n' --sweep 'max-batch-size=1,4,8,16' 'batch-window-ms=0,2,5,10' --slo 'p99<50ms'
  batchline profile --out profile.json && batchline simulate --rate 2000 --latency-profile profile.json --model-latency-ms 20`,
  );
  command.action((raw: Record<string, unknown>) =>
    withOptionsAsGiven(SIMULATE_OPTIONS, raw, async () => {
      const options = resolveOptions(SIMULATE_OPTIONS, raw);
      const given = new Set(Object.keys(SIMULATE_OPTIONS).filter((key) => raw[key] !== undefined));
      const sweep = raw.sweep as string[] | undefined;
      const { simulateMain } = await import('./simulate-main.js');
      await simulateMain({
        options,
        given,
        sweep,
        stdout: process.stdout,
        commandLine: commandLineOf(process.argv, {}, environmentOf(SIMULATE_OPTIONS, raw, process.env)),
      });
    }),
  );
  return command;
}
