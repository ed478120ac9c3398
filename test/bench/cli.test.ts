import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildProgram, exitCodeFor } from '../../src/cli.js';
import { runBatchline } from '../batchline-cli.js';
import { refusedPort } from './servers.js';

async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      stderr += chunk.toString();
      done();
    },
  });
  const program = buildProgram();
  program.configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} });
  for (const sub of program.commands) sub.configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} });
  try {
    await program.parseAsync(['node', 'batchline', ...args]);
    return { code: 0, stderr };
  } catch (error) {
    return { code: exitCodeFor(error, sink), stderr };
  }
}

describe('batchline bench rates in units', () => {
  // -R takes wrk's units (-R 2k), but a stage's rate did not: '--stages 1s:2k' exited 2 with
  // 'is not duration:rate'. It is a plan's rate, read as -R reads it.
  it("reads a stage's rate in -R's units", async () => {
    const { validated } = await import('./plan-helper.js');
    expect(validated('http://127.0.0.1:1/', { stages: '1s:2k,2s:1.5k,1s:0' }).plan.stages).toEqual([
      { durationMs: 1000, targetRps: 2000 },
      { durationMs: 2000, targetRps: 1500 },
      { durationMs: 1000, targetRps: 0 },
    ]);
  });
});

describe('batchline bench seed from the environment', () => {
  // BENCH_SEED=abc was named '--seed', which the command line did not give.
  it('names BENCH_SEED when the bad seed came from it', async () => {
    const fromEnv = await runBatchline(['bench', '-R', '10', 'http://127.0.0.1:1/'], { env: { BENCH_SEED: 'abc' } });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain(
      "invalid option BENCH_SEED (--seed): got 'abc', expected an integer from 0 to 4294967295",
    );
    const fromFlag = await runBatchline(['bench', '-R', '10', '--seed', 'abc', 'http://127.0.0.1:1/'], {
      env: { BENCH_SEED: '7' },
    });
    expect(fromFlag.code).toBe(2);
    expect(fromFlag.stderr).toContain("invalid option --seed: got 'abc'");
  });
});

describe('batchline bench options', () => {
  it.each([
    [['--arrival', 'uniform'], '--arrival', 'one of constant, poisson'],
    [['--connections', '0'], '--connections', 'an integer from 1 to 10000'],
    [['--duration', 'soon'], '--duration', 'a duration such as'],
    [['-d', '0'], '--duration', 'a bare number is seconds'],
    [['-c', '0'], '--connections', 'an integer from 1 to 10000'],
    [['--stages', '10s'], '--stages', 'duration:rate'],
    [['--method', 'POST', '--body', '{}', 'grpc://127.0.0.1:1/models/m'], '--method', 'every call is ModelInfer'],
    [['--stages', '1s:0,2s:0'], "--stages: got '1s:0,2s:0'", 'every stage has rate 0, so nothing would be sent'],
    [['--seed', '-3'], '--seed', 'an integer from 0 to 4294967295'],
    // The open loop's schedule, given to a closed loop: the run went ahead without it.
    [['--arrival', 'poisson'], "--arrival: got 'poisson'", 'an open loop (-R/--rate, --stages or --sweep)'],
    [['--seed', '7'], "--seed: got '7'", "an open loop (-R/--rate, --stages or --sweep): it seeds the schedule's"],
    [['--max-in-flight', '5'], "--max-in-flight: got '5'", 'an open loop (-R/--rate, --stages or --sweep)'],
    [['--header', 'no colon'], '--header', "'name: value'"],
    [['--method', 'FETCH'], '--method', 'one of GET, HEAD, POST'],
    [['--sweep', '5..1/1'], '--sweep', 'FROM..TO/STEP'],
    [['--sweep', '100,200', '--slo', 'p97<1s'], '--slo', 'p50, p90, p95, p99, p999, mean or max'],
    [['--threshold', 'p99<fast'], '--threshold', 'expected clauses such as p99<50ms'],
    [['--sweep', '100,200', '--threshold', 'p99<1s'], '--threshold', 'with --sweep, give the objective with --slo'],
    [['--http-client', 'lean', 'https://127.0.0.1:1/'], '--http-client', 'undici or auto'],
    // Without --sweep, --slo was ignored and the run exited 0 whatever its p99.
    [
      ['--slo', 'p99<5ms'],
      "--slo: got 'p99<5ms'",
      "a single run is judged by --threshold (such as --threshold 'p99<100ms')",
    ],
    [['--slo', 'p99'], "--slo: got 'p99'", '--threshold'],
    // --requests won silently over --duration (hey and oha let the duration win), and a sweep's
    // steps of -n requests had no planned end, so no trend judged them: a rate over capacity was met.
    [['-n', '100', '-d', '5s'], "--requests: got '100'", 'either --requests or --duration, not both'],
    [['-n', '100', '--stages', '5s:10'], "--requests: got '100'", 'either --requests or --stages, not both'],
    [['-n', '100', '--sweep', '100,200'], "--requests: got '100'", 'no --requests with --sweep'],
    // The sweep's rates ran and --rate was dropped without a word.
    [['--rate', '50', '--sweep', '100,200'], "--sweep: got '100,200'", 'either --sweep or --rate (50), not both'],
    // -R stops at 10000000 req/s, but a stage's or a sweep step's rate had no bound: 1e9 req/s
    // ran, and a 1 s stage held the generator for many seconds (a million sends in flight).
    [['--stages', '1s:1G'], "--stages: got '1s:1G'", 'a rate from 0 to 10000000 req/s, as -R'],
    [['--sweep', '100,1G'], "--sweep: got '100,1G'", 'rates up to 10000000 req/s, as -R'],
    // Read with Number(), a stage and a sweep step took 0x10 and 1e3, which -R refuses.
    [['--stages', '1s:0x10'], "--stages: got '1s:0x10'", 'duration:rate'],
    [['--sweep', '100,1e3'], "--sweep: got '100,1e3'", 'rates'],
    // And their length had none, where -d stops at 86400 s.
    [['--stages', '1000000h:10'], "--stages: got '1000000h:10'", 'a total length up to 86400 s, as -d'],
    // Stages of no length blamed the default --warmup ('got 1000 ms').
    [['--stages', '0s:10'], "--stages: got '0s:10'", 'a total length above 0'],
    // A CR or LF in a value went into the lean client's request as is: a header of its own.
    [['-H', 'x-a: 1\r\nx-injected: yes'], '--header', 'a value without CR, LF or NUL'],
    [
      ['--body', 'x', '--content-type', 'text/plain\r\nx-injected: yes'],
      '--content-type',
      'a value without CR, LF or NUL',
    ],
    // The lean client dropped these without a word, and undici failed every request on them.
    [['-H', 'content-length: 3', '--body', 'hello'], "--header: got 'content-length: 3'", 'bench frames the body'],
    [['-H', 'Transfer-Encoding: chunked'], "--header: got 'Transfer-Encoding: chunked'", 'bench frames the body'],
    // Requests pipelined behind one that closes its connection are lost: the lean client's got 400s.
    [
      ['-H', 'Connection: Close', '--pipelining', '4'],
      "--pipelining: got '4', expected 1 with -H 'connection: close'",
      'pipelined requests need a connection that stays open',
    ],
    // --sweep-connections (perf_analyzer's --concurrency-range): its grammar, and what it runs over.
    [['--sweep-connections', '1:16:2'], "--sweep-connections: got '1:16:2'", 'FROM..TO/STEP such as 1..16/2'],
    [['--sweep-connections', '1..16/0'], "--sweep-connections: got '1..16/0'", 'FROM..TO/STEP'],
    [['--sweep-connections', '16..1/2'], "--sweep-connections: got '16..1/2'", 'FROM..TO/STEP'],
    [['--sweep-connections', '0,4'], "--sweep-connections: got '0,4'", 'whole numbers from 1 to 10000'],
    [['--sweep-connections', '1.5,4'], "--sweep-connections: got '1.5,4'", 'whole numbers from 1 to 10000'],
    [['--sweep-connections', '2,20000'], "--sweep-connections: got '2,20000'", 'whole numbers from 1 to 10000'],
    [['--sweep-connections', '1..2001/2'], "--sweep-connections: got '1..2001/2'", 'at most 1000 steps'],
    [
      ['--sweep-connections', '1,4', '--sweep', '100,200'],
      '--sweep-connections',
      'either --sweep-connections or --sweep',
    ],
    [['--sweep-connections', '1,4', '-R', '100'], '--sweep-connections', 'either --sweep-connections or --rate (100)'],
    [['--sweep-connections', '1,4', '--stages', '2s:100'], '--sweep-connections', 'or --stages, not both'],
    [['--sweep-connections', '1,4', '-c', '8'], '--sweep-connections', 'or -c/--connections (8), not both'],
    [['--sweep-connections', '1,4', '-n', '100'], "--requests: got '100'", 'no --requests with --sweep-connections'],
    [
      ['--sweep-connections', '1,4', '--workers', '2'],
      "--workers: got '2'",
      'the fewest connections of --sweep-connections (1)',
    ],
    [
      ['--sweep-connections', '1,4', '--threshold', 'p99<1s'],
      '--threshold',
      'with --sweep-connections, give the objective with --slo',
    ],
    [['--sweep-connections', '1,4', '--slo', 'p97<1s'], '--slo', 'p50, p90, p95, p99, p999, mean or max'],
    [['--sweep-connections', '1,4', '--arrival', 'poisson'], '--arrival', 'an open loop'],
    [['--sweep-connections', '1,4', '--hdr-log', '-'], "--hdr-log: got '-'", 'with --sweep-connections'],
    // The warmup was named in ms as if typed so ('got 5000', then 'got '5000 ms''): as typed.
    [['--stages', '1s:10,1s:20', '--warmup', '5s'], "--warmup: got '5s',", "less than the stages' total of 2s"],
    [['--stages', '1s:10,1s:20', '--warmup', '2500ms'], "--warmup: got '2500ms',", "the stages' total of 2s"],
    [['--stages', '500ms:10'], "--warmup: got '1s' (the default)", "less than the stages' total of 500ms"],
  ])('exits 2 naming the option for %j', async (args, option, allowed) => {
    const url = /^(https|grpc):\/\//.test(args.at(-1) ?? '') ? [] : ['http://127.0.0.1:1/'];
    const { code, stderr } = await run(['bench', ...args, ...url]);
    expect(code).toBe(2);
    expect(stderr).toContain(option);
    expect(stderr).toContain(allowed);
  });

  it('exits 2 for a missing or non-http URL', async () => {
    expect((await run(['bench'])).code).toBe(2);
    // Port 0 is no server's: the run went ahead and failed every request 'refused' with no port named.
    const zero = await run(['bench', 'http://127.0.0.1:0/']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain("<url>: got 'http://127.0.0.1:0/', expected a port from 1 to 65535");
    const { code, stderr } = await run(['bench', 'ftp://example.com/']);
    expect(code).toBe(2);
    expect(stderr).toContain('<url>');
  });

  it('bench compare and merge name the argument whose file is missing, and the run that writes it', async () => {
    const compare = await run(['bench', 'compare', '/nonexistent/before.json', '/nonexistent/after.json']);
    expect(compare.code).toBe(2);
    expect(compare.stderr).toContain(
      "invalid argument <a> (the baseline report): no such file '/nonexistent/before.json'; a report is what a run writes with --json: batchline bench --json /nonexistent/before.json <url>",
    );
    const merge = await run(['bench', 'merge', '/nonexistent/a.json', '/nonexistent/b.json']);
    expect(merge.code).toBe(2);
    expect(merge.stderr).toContain("invalid argument <reports>: no such file '/nonexistent/");
  });

  it('exits 1 and says so when no request succeeded', async () => {
    // A port released just now, not port 1: on a shared host something may listen there.
    const port = await refusedPort();
    const { code, stderr } = await run([
      'bench',
      '--duration',
      '300ms',
      '--warmup',
      '0',
      '--quiet',
      `http://127.0.0.1:${port}/`,
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(
        `no request succeeded \\(no 2xx answer among \\d+ sent; errors refused \\d+ \\(first: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)\\)`,
      ),
    );
  });

  it('exits 1 naming the host when it does not resolve, before sending', async () => {
    // '.invalid' never resolves (RFC 2606); the run used to count 'errors timeout 16, other 24'.
    const { code, stderr } = await run([
      'bench',
      '-d',
      '300ms',
      '--warmup',
      '0',
      '--quiet',
      'http://no-such-host.invalid/',
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(/cannot resolve the host 'no-such-host\.invalid' \(E[A-Z_]+\); no request was sent/);
  });

  it.each([
    ['--json', '/nonexistent/run.json'],
    ['--hdr-log', '/nonexistent/run.hlog'],
  ])('refuses %s into a directory that is not there before the run, not after it', async (flag, path) => {
    // 'http://127.0.0.1:1/' refuses: a run would exit 1 (no 2xx), the check exits 2 first.
    const { code, stderr } = await run([
      'bench',
      '-d',
      '300ms',
      '--warmup',
      '0',
      '--quiet',
      flag,
      path,
      'http://127.0.0.1:1/',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain(`${flag}: cannot write '${path}': no directory /nonexistent`);
  });

  it("refuses an empty --body file as it refuses --body ''", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bench-body-'));
    const empty = join(dir, 'empty.json');
    await writeFile(empty, '');
    try {
      const { code, stderr } = await run([
        'bench',
        '-n',
        '3',
        '--warmup',
        '0',
        '--quiet',
        '--body',
        `@${empty}`,
        'http://127.0.0.1:1/',
      ]);
      expect(code).toBe(2);
      expect(stderr).toContain(`--body: @${empty} is empty; expected the request body`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('explains every option in --help', () => {
    const bench = buildProgram().commands.find((c) => c.name() === 'bench');
    const help = bench?.helpInformation() ?? '';
    for (const flag of [
      '--connections',
      '--rate',
      '--arrival',
      '--stages',
      '--seed',
      '--duration',
      '--requests',
      '--warmup',
      '--timeout',
      '--method',
      '--header',
      '--body',
      '--content-type',
      '--pipelining',
      '--workers',
      '--max-in-flight',
      '--json',
      '--hdr-log',
      '--sweep',
      '--slo',
      '--sweep-connections',
    ]) {
      expect(help).toContain(flag);
    }
    expect(help).toContain('compare');
  });
});
