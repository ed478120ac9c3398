import { CommanderError } from 'commander';

const WORKERS = "bench's is --workers N (worker threads, each with its share of the connections and the rate)";
const STAGES =
  "bench's are one flag, --stages 30s:100,1m:100 (comma-separated), and their targets are rates in req/s, as in k6's ramping-arrival-rate, not users";
const USERS =
  'a closed loop keeps --connections N (-c) senders busy, as users that send again at once; an open loop sends --rate R (-R) a second whatever the answers';
const BODY_FILE = "bench's is --body @file (a .jsonl file: one body per line, cycled)";
const REQUEST_FILE =
  "bench's is --body @request.json, the Open Inference Protocol's JSON request as POST /v2/models/NAME/infer takes it (over grpc:// too; a .jsonl file: one request a line, cycled)";
const WINDOWS_RULE =
  'windows of --window (5s by default) after --warmup until the last three agree within PCT % of their mean on req/s and the mean latency (--stable-latency), up to --max-windows (10)';
const WINDOWS = `bench's is --stable PCT: ${WINDOWS_RULE}`;
const REPORT_FILE =
  "bench's is --csv FILE (perf_analyzer's columns, latencies in µs, then bench's own); --json FILE has every figure with the whole histograms";

/**
 * Flags of wrk, wrk2, k6, hey, ab and perf_analyzer that `bench` has under another name, or does without: a user
 * who types them from habit gets bench's way besides commander's "unknown option".
 */
const OTHER_TOOLS_FLAGS: Record<string, string> = {
  '-t': `-t is wrk's threads: ${WORKERS}`,
  '--threads': `--threads is wrk's: ${WORKERS}`,
  '--latency':
    "--latency is wrk's: bench always prints the percentiles (p50 to p99.9 and max); --hdr-log writes the whole histograms",
  '-L': "-L is wrk's --latency: bench always prints the percentiles (p50 to p99.9 and max); --hdr-log writes the whole histograms",
  '--u_latency':
    "--u_latency is wrk2's uncorrected latency: bench prints it always, as the service row (from the write to the socket), under the corrected latency",
  '-U': "-U is wrk2's uncorrected latency: bench prints it always, as the service row (from the write to the socket), under the corrected latency",
  '-s': `-s is wrk's Lua script or k6's --stage: bench has no scripts (--method, -H, --body @file); ${STAGES}`,
  '--script': "bench has no scripts: the request is --method, -H 'name: value' and --body (inline or @file)",
  '--stage': `--stage is k6's: ${STAGES}`,
  '-u': `-u is k6's virtual users (${USERS}) or perf_analyzer's server URL (bench takes the URL as its argument: http://host:8000/v2/models/NAME/infer, grpc://host:8001/models/NAME)`,
  '--vus': `--vus is k6's: ${USERS}`,
  '-i': "-i is k6's iterations (bench's is -n / --requests N) or perf_analyzer's protocol (bench's URL says it: grpc://host:port/models/NAME for gRPC)",
  '--iterations': "--iterations is k6's: bench's is -n / --requests N",
  '-z': "-z is hey's duration: bench's is -d / --duration",
  '-q': "-q is hey's rate per worker: bench's is -R / --rate, the total rate in req/s",
  '-m': "-m is hey's method (bench's is --method) or perf_analyzer's model (bench's URL names it: /v2/models/NAME/infer, grpc://host:port/models/NAME)",
  '-D': `-D is hey's body file: ${BODY_FILE}`,
  '-p': `-p is ab's body file (${BODY_FILE}) or perf_analyzer's measurement interval (bench's is --window D with --stable PCT)`,
  '-T': "-T is ab's content type or wrk's timeout: bench's are --content-type and --timeout",
  '-o': "-o is k6's --out: bench writes --json FILE (the summary, with the whole histograms), --hdr-log FILE (per second) and --html FILE",
  '--out':
    "--out is k6's: bench writes --json FILE (the summary, with the whole histograms), --hdr-log FILE (per second) and --html FILE",
  '--summary-export': "--summary-export is k6's: bench's is --json FILE",
  '--rps': "--rps is k6's cap on the rate: bench's -R / --rate sends that many a second on a schedule (open loop)",
  '--insecure-skip-tls-verify': "--insecure-skip-tls-verify is k6's: bench's is --insecure",
  '--tag':
    "--tag is k6's: bench has no tags; a run's --json names its url, method, body (its SHA-256) and start, so name the file for the run (--json canary.json); a header every request carries is -H 'name: value'",
  '--no-thresholds': "--no-thresholds is k6's: bench judges only the --threshold flags given, so leave them out",
  '--summary-trend-stats':
    "--summary-trend-stats is k6's: bench always prints p50, p90, p95, p99, p99.9, max and the mean; --json FILE holds them with the whole histograms",
  '--no-summary':
    "--no-summary is k6's: bench always prints its summary (on stderr with --json -, which writes the JSON to stdout); --quiet drops the progress line",
  '--http-debug': "--http-debug is k6's: bench logs no request; try the request once with curl -v",
  '--max-redirects':
    "--max-redirects is k6's: bench follows no redirect (a 3xx is counted by its status and is not 2xx, so it counts in --threshold 'errors<…')",
  '--no-connection-reuse':
    "--no-connection-reuse is k6's: bench's is -H 'connection: close' (a connection per request, as wrk's)",
  '--user-agent': "--user-agent is k6's: bench's is -H 'user-agent: …'",
  '-e': "-e is k6's environment variable for a script: bench has no scripts (--method, -H 'name: value', --body)",
  '--env': "--env is k6's environment variable for a script: bench has no scripts (--method, -H 'name: value', --body)",
  '-k': "-k is ab's keep-alive (bench always keeps its connections alive, -c of them) or curl's --insecure: bench's is --insecure",
  '-x': "-x is perf_analyzer's model version: bench's URL names it (/v2/models/NAME/versions/V/infer, grpc://host:port/models/NAME/versions/V)",
  '--concurrency-range':
    "--concurrency-range is perf_analyzer's: bench's is --sweep-connections FROM..TO/STEP (1:16:2 is 1..16/2: a closed-loop step of each count of connections, each -d long, judged by --slo); -c N runs one",
  '--request-rate-range':
    "--request-rate-range is perf_analyzer's: bench's is --sweep FROM..TO/STEP (an open-loop step a rate, each -d long, judged by --slo)",
  '-b': "-b is perf_analyzer's batch size: bench sends the --body you give, so a request of 4 rows is a body whose inputs have shape [4, …]; the Server section counts inferences by rows",
  '--shape': `--shape is perf_analyzer's: bench makes up a body only for inputs of fixed shape; for a free dimension, ${REQUEST_FILE}`,
  '--input-data': `--input-data is perf_analyzer's: ${REQUEST_FILE}`,
  '--measurement-interval': `--measurement-interval is perf_analyzer's: bench's is --window D, with --stable PCT (${WINDOWS_RULE})`,
  '--measurement-mode':
    "--measurement-mode is perf_analyzer's: bench's time_windows are --window 5s, its count_windows --window 500req (--measurement-request-count 500), with --stable PCT",
  '--measurement-request-count':
    "--measurement-request-count is perf_analyzer's: bench's is --window 500req (a window of 500 measured requests) with --stable PCT; for one run of N requests, -n / --requests N",
  '--max-trials': `--max-trials is perf_analyzer's: bench's is --max-windows N with --stable PCT (${WINDOWS_RULE})`,
  '--percentile':
    "--percentile is perf_analyzer's stabilisation percentile: bench's is --stable-latency with --stable PCT (--percentile=95 is --stable-latency p95; p50, p90, p95 or p99; the mean by default, as perf_analyzer without --percentile)",
  '--stability-percentage': `--stability-percentage is perf_analyzer's: ${WINDOWS}`,
  '--latency-threshold':
    "--latency-threshold is perf_analyzer's: bench's is --slo 'mean<MSms' --stop-on-miss, the objective and the stop as two flags (the sweep ends after the first step that does not meet --slo; perf_analyzer's latency is the mean, or its --percentile: --slo 'p95<MSms'; bench's objective also bounds errors, 1 % unless it says)",
  '-f': `-f is perf_analyzer's CSV file: ${REPORT_FILE}`,
  '--latency-report-file': `--latency-report-file is perf_analyzer's: ${REPORT_FILE}`,
  '--collect-metrics':
    "--collect-metrics is perf_analyzer's: against a server with Triton's statistics extension (batchline's own, over HTTP or gRPC) bench reads them at the start and end of the window and prints a Server section (queue, compute), always",
};

/** Bench's way for a flag of another load tester that commander refused, or undefined. */
export function otherToolsFlagHint(argv: readonly string[], error: unknown): string | undefined {
  if (!(error instanceof CommanderError) || error.code !== 'commander.unknownOption') return undefined;
  const args = argv.slice(2);
  if (!isBenchRun(args)) return undefined;
  const given = /unknown option '([^']+)'/.exec(error.message)?.[1] ?? '';
  const flag = flagOf(given);
  const hint = OTHER_TOOLS_FLAGS[flag];
  if (hint === undefined) return undefined;
  return `batchline bench: ${flag === '--latency-threshold' ? withThreshold(hint, given, args) : hint}`;
}

/**
 * Whether a `bench` run's arguments hold a flag that `otherToolsFlagHint` answers: commander's own
 * guess at a near bench flag ("Did you mean --stages?" for k6's `--tag`) is then left out, as it
 * would stand before bench's answer and lead elsewhere.
 */
export function namesOtherToolsFlag(argv: readonly string[]): boolean {
  const args = argv.slice(2);
  return isBenchRun(args) && args.some((arg) => arg.startsWith('-') && Object.hasOwn(OTHER_TOOLS_FLAGS, flagOf(arg)));
}

/** `bench URL`, not `bench compare` or `bench merge` (their flags are their own). */
function isBenchRun(args: readonly string[]): boolean {
  return args[0] === 'bench' && args[1] !== 'compare' && args[1] !== 'merge';
}

/** The flag of an argument as typed: `-t4` and `--threads=4` as well as `-t 4`. */
function flagOf(given: string): string {
  return given.startsWith('--') ? (given.split('=')[0] as string) : given.slice(0, 2);
}

/** perf_analyzer's `--latency-threshold 50` (or `=50`) as bench spells it: `--slo 'mean<50ms'`. */
function withThreshold(hint: string, given: string, args: readonly string[]): string {
  const value = given.includes('=') ? given.slice(given.indexOf('=') + 1) : args[args.indexOf(given) + 1];
  return value !== undefined && /^\d+(\.\d+)?$/.test(value) ? hint.replaceAll('MSms', `${value}ms`) : hint;
}
