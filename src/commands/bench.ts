import { Command } from 'commander';
import { BENCH_OPTIONS } from '../options/bench.js';
import { withOptionsAsGiven } from '../options/named-as-given.js';
import { addOptions } from '../options/command-flags.js';
import { resolveOptions } from '../options/schema.js';
import { commandLineOf, environmentOf } from '../report/html/command-line.js';

/**
 * `batchline bench <url>` and `batchline bench compare a.json b.json`. Thin: options are parsed
 * and validated here; the generator (undici, histograms, workers) loads only when a run starts.
 */
export function makeBenchCommand(): Command {
  const command = new Command('bench')
    .description(
      'Load-test an HTTP or gRPC endpoint (http://, https://, grpc://). Closed loop by default (--connections senders, each sending its next request when the last ends); ' +
        'open loop with --rate or --stages (a schedule fixed in advance, latency timed from each intended send, as wrk2 does). ' +
        'Reports throughput, status and error counts (each kind with its first cause), and p50/p90/p95/p99/p99.9/max/mean latency from HDR histograms; ' +
        "against a model with Triton's statistics (batchline's own), the server's own split of its time (queue, compute), as perf_analyzer's Server section.",
    )
    .argument(
      '[url]',
      'the endpoint to load, such as http://127.0.0.1:8080/v1/infer or grpc://127.0.0.1:8081/models/NAME',
    )
    // Options after `compare` or `merge` are theirs (compare's --html, merge's --json are not the run's).
    .enablePositionalOptions();
  addOptions(command, BENCH_OPTIONS);
  command.addHelpText(
    'after',
    `
Examples:
  batchline bench localhost:8080/v1/infer                           closed loop, 16 connections, 10 s (http:// assumed)
  batchline bench -c 64 -d 30 -R 500 localhost:8080/v1/infer        open loop at 500 req/s for 30 s on 64 connections
  batchline bench --rate 500 --duration 1m30s --warmup 5s <url>
  batchline bench --stages '10s:200,10s:800,20s:800' --arrival poisson <url>
  batchline bench --sweep '100..2000/100' --slo 'p99<100ms' <url>  find the highest rate within the objective
  batchline bench --sweep-connections 1..16/2 --slo 'p95<50ms' <url>  closed loop at 1, 3, … 15 connections (perf_analyzer's --concurrency-range 1:16:2)
  batchline bench -R 300 --threshold 'p95<50ms' --threshold 'errors<1%' <url>   exit 99 when one fails, as k6
  batchline bench -R 300 --threshold "http_req_duration: ['p(95)<50']" <url>      k6's thresholds read as they are
  batchline bench --body @inputs.jsonl <url>                        one body per line, cycled
  batchline bench --stable 10 --window 5s -c 4 <url>               windows until three agree within 10% (perf_analyzer's stabilisation)
  batchline bench --sweep-connections 1..8/1 --stable 10 --csv results.csv <url>  perf_analyzer's -f CSV, a row a step
  batchline bench --json run.json --hdr-log run.hlog <url>
  batchline bench --rate 300 --duration 30s --html report.html <url>
  batchline bench compare before.json after.json
  batchline bench merge a.json b.json --json all.json               one report from runs made at once on several machines`,
  );
  command.action((url: string | undefined, raw: Record<string, unknown>, self: Command) =>
    withOptionsAsGiven(BENCH_OPTIONS, raw, async () => {
      const options = resolveOptions(BENCH_OPTIONS, raw);
      const { validateBench, parseThresholds } = await import('../bench/plan-from-options.js');
      const explicit = {
        method: self.getOptionValueSource('method') === 'cli',
        rate: self.getOptionValueSource('rate') === 'cli' || process.env.BENCH_RATE !== undefined,
        duration: self.getOptionValueSource('duration') === 'cli',
        slo: self.getOptionValueSource('slo') === 'cli',
        // BENCH_SEED set for every run of a CI job does not refuse its closed loops.
        seed: self.getOptionValueSource('seed') === 'cli',
        connections: self.getOptionValueSource('connections') === 'cli',
      };
      const validated = validateBench(url, options, options.header, explicit, Date.now());
      const thresholds = parseThresholds(options.threshold, options.sweep, options.sweepConnections);
      const { benchMain } = await import('./bench-main.js');
      await benchMain(
        validated,
        {
          json: options.json,
          hdrLog: options.hdrLog,
          html: options.html,
          csv: options.csv,
          sweep: options.sweep,
          sweepConnections: options.sweepConnections,
          slo: options.slo,
          stopOnMiss: options.stopOnMiss,
          thresholds,
          quiet: options.quiet,
          noUi: !options.ui,
          commandLine: commandLineOf(
            process.argv,
            { url, headers: options.header },
            environmentOf(BENCH_OPTIONS, raw, process.env),
          ),
        },
        { stdout: process.stdout, stderr: process.stderr, env: process.env },
      );
    }),
  );

  command
    .command('compare')
    .description(
      'Compare two runs saved with --json: each figure, its change, and a verdict that says when the difference is noise.',
    )
    .argument('<a>', 'the first (baseline) --json report')
    .argument('<b>', 'the second --json report')
    .option(
      '--html <file>',
      'also write a self-contained HTML page: both latency distributions on one plot, the figures and the verdict',
    )
    .action(async (a: string, b: string, options: { html?: string }) => {
      const { compareMain } = await import('./compare-main.js');
      await compareMain(
        a,
        b,
        process.stdout,
        options.html === undefined ? undefined : { path: options.html, commandLine: commandLineOf(process.argv) },
      );
    });
  command
    .command('merge')
    .description(
      'Merge the --json reports of runs made at the same time on several machines (when one cannot generate the load) into one: histograms added exactly, counts and rates summed.',
    )
    .argument('<reports...>', 'two or more bench --json reports')
    .option('--json <file|->', 'write the merged report as JSON to this file, or - for stdout')
    .action(async (reports: string[], options: { json?: string }) => {
      const { mergeMain } = await import('./merge-main.js');
      await mergeMain(reports, options.json, process.stdout);
    });
  return command;
}
