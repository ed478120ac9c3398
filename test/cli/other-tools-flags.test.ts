import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { otherToolsFlagHint } from '../../src/commands/bench-other-tools.js';
import { runBatchline } from '../batchline-cli.js';

const unknown = (flag: string) => new CommanderError(1, 'commander.unknownOption', `error: unknown option '${flag}'`);
const argv = (...args: string[]) => ['node', 'batchline', ...args];

describe('bench and the flags of wrk, wrk2, k6, hey, ab and perf_analyzer', () => {
  it("answers a flag typed from another tool's habit with bench's way, however it was written", () => {
    for (const given of ['-t', '-t4', '--threads', '--threads=4'])
      expect(otherToolsFlagHint(argv('bench', given, 'x'), unknown(given))).toContain('--workers');
    expect(otherToolsFlagHint(argv('bench', '--stage', '5s:10'), unknown('--stage'))).toContain(
      '--stages 30s:100,1m:100',
    );
    expect(otherToolsFlagHint(argv('bench', '--u_latency'), unknown('--u_latency'))).toContain('service row');
    expect(otherToolsFlagHint(argv('bench', '--vus', '10'), unknown('--vus'))).toContain('--connections');
    expect(otherToolsFlagHint(argv('bench', '--out=json=x'), unknown('--out=json=x'))).toContain('--json FILE');
  });

  // A Triton user types perf_analyzer's flags; they got commander's bare "unknown option".
  it("answers perf_analyzer's flags with bench's way, and names both tools where a letter is shared", () => {
    const hint = (flag: string) => otherToolsFlagHint(argv('bench', flag, 'x'), unknown(flag)) ?? '';
    expect(hint('--concurrency-range')).toContain('--sweep-connections FROM..TO/STEP (1:16:2 is 1..16/2');
    expect(hint('--request-rate-range=100:400:100')).toContain('--sweep FROM..TO/STEP');
    expect(hint('-b')).toContain('--body');
    expect(hint('-x')).toContain('/versions/V');
    expect(hint('--shape')).toContain('--body @request.json');
    expect(hint('--input-data')).toContain('--body @request.json');
    expect(hint('--measurement-interval')).toContain('--window D, with --stable PCT');
    expect(hint('--stability-percentage=5')).toContain("bench's is --stable PCT");
    expect(hint('--max-trials')).toContain('--max-windows N');
    expect(hint('--measurement-request-count')).toContain('-n / --requests N');
    expect(hint('--percentile=95')).toContain('p99');
    expect(hint('-f')).toContain("bench's is --csv FILE");
    expect(hint('--collect-metrics')).toContain('Server');
    expect(hint('-m')).toMatch(/hey's method.*perf_analyzer's model/);
    expect(hint('-u')).toMatch(/k6's virtual users.*perf_analyzer's server/);
    expect(hint('-i')).toMatch(/k6's iterations.*grpc:\/\//);
    expect(hint('-p')).toMatch(/ab's body file.*perf_analyzer's measurement interval.*--window D/);
  });

  // A k6 user's flags beyond the executors: they got commander's bare "unknown option" (or "Did you mean --stages?" for --tag).
  it("answers k6's run flags with bench's way, or says bench does without", () => {
    const hint = (flag: string) => otherToolsFlagHint(argv('bench', flag, 'x'), unknown(flag)) ?? '';
    expect(hint('--tag')).toContain('bench has no tags');
    expect(hint('--no-thresholds')).toContain('--threshold');
    expect(hint('--summary-trend-stats=avg,p(99)')).toContain('p99.9, max and the mean');
    expect(hint('--no-summary')).toContain('--json -');
    expect(hint('--http-debug')).toContain('curl -v');
    expect(hint('--max-redirects')).toContain('follows no redirect');
    expect(hint('--no-connection-reuse')).toContain("-H 'connection: close'");
    expect(hint('--user-agent')).toContain("-H 'user-agent: …'");
    for (const flag of ['-e', '-eFOO=1', '--env']) expect(hint(flag)).toContain('bench has no scripts');
  });

  // commander's guess at a near bench flag led a k6 user astray before the answer: --tag "Did you mean --stages?".
  it("drops commander's guess when bench answers the flag itself, and keeps it for a plain typo", async () => {
    const tag = await runBatchline(['bench', '--tag', 'a=b', 'http://127.0.0.1:1/']);
    expect(tag.code).toBe(2);
    expect(tag.stderr).toContain("unknown option '--tag'");
    expect(tag.stderr).toContain('bench has no tags');
    expect(tag.stderr).not.toContain('Did you mean');
    const typo = await runBatchline(['bench', '--stagse', '5s:10', 'http://127.0.0.1:1/']);
    expect(typo.stderr).toContain('Did you mean --stages?');
  });

  // perf_analyzer's --latency-threshold is an objective and a stop: bench spells them as two flags.
  it("answers --latency-threshold MS with bench's --slo 'mean<MSms' --stop-on-miss, its value filled in", () => {
    const threshold = (...args: string[]) =>
      otherToolsFlagHint(argv('bench', ...args, 'x'), unknown(args[0] as string)) ?? '';
    for (const given of [['--latency-threshold', '50'], ['--latency-threshold=50']])
      expect(threshold(...given)).toContain(
        "batchline bench: --latency-threshold is perf_analyzer's: bench's is --slo 'mean<50ms' --stop-on-miss",
      );
    expect(threshold('--latency-threshold', '50')).toContain("--percentile: --slo 'p95<50ms'");
    expect(threshold('--latency-threshold', 'x')).toContain("--slo 'mean<MSms' --stop-on-miss");
  });

  it('says nothing of a flag no other tool has, nor outside bench runs', () => {
    expect(otherToolsFlagHint(argv('bench', '--bogus'), unknown('--bogus'))).toBeUndefined();
    expect(otherToolsFlagHint(argv('serve', '-t'), unknown('-t'))).toBeUndefined();
    expect(otherToolsFlagHint(argv('bench', 'compare', 'a', 'b', '-t'), unknown('-t'))).toBeUndefined();
  });

  it('prints it after the unknown option and exits 2', async () => {
    const result = await runBatchline(['bench', '-t', '4', 'localhost:1/']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("error: unknown option '-t'\n");
    expect(result.stderr).toContain("batchline bench: -t is wrk's threads: bench's is --workers N");
  });
});
