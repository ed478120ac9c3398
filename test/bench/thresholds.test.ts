import { afterEach, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import { parseThresholds } from '../../src/bench/plan-from-options.js';
import { formatThresholds, judgeThresholds } from '../../src/bench/thresholds.js';
import { evaluateObjective } from '../../src/options/objective.js';
import { ExitWithCode } from '../../src/errors.js';
import { validated } from './plan-helper.js';
import { startServer, type TestServer } from './servers.js';
import { TextSink } from './text-sink.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('bench --threshold', () => {
  it("prints each value judged rounded as the latency table's, not whole ('mean 5.85444ms')", () => {
    const [objective] = parseThresholds(['mean<10,p99<200,max<2s,p50<1'], undefined);
    const figures = {
      latency: { count: 9, p50: 0.41234, p90: 0, p95: 0, p99: 123.456, p999: 0, max: 1234.56, mean: 5.85444 },
      lossRatio: 0,
    };
    const clauses = evaluateObjective(objective!, figures);
    const text = formatThresholds([{ threshold: objective!.text, met: true, clauses }]);
    expect(text).toContain('mean 5.85ms, p99 123.5ms, max 1235ms, p50 0.412ms');
    expect(judgeThresholds).toBeTypeOf('function');
  });

  it('passes a run that holds every threshold, fails one that does not with a line naming it, as k6 does', async () => {
    // One answer in five is a 500.
    let n = 0;
    server = await startServer((_req, res) => {
      res.statusCode = n++ % 5 === 4 ? 500 : 200;
      res.end();
    });
    const run = async (thresholds: string[], url = server!.url) => {
      const stdout = new TextSink();
      const json = new TextSink();
      const outputs = {
        json: undefined,
        hdrLog: undefined,
        sweep: undefined,
        slo: 'p99<100ms',
        quiet: true,
        thresholds: parseThresholds(thresholds, undefined),
      };
      let exit: unknown;
      await benchMain(validated(url, { rate: '200', duration: '500ms', warmup: '0' }), outputs, {
        stdout,
        stderr: json,
        env: {},
      }).catch((error: unknown) => (exit = error));
      return { text: stdout.text, exit };
    };

    // p95 under 30 s holds on any host that answers (a stalled one gave a p95 of 1009 ms): the
    // latency's verdict is not what is checked here, the exit and the lines are.
    const held = await run(['p95<30s', 'errors<25%']);
    expect(held.exit).toBeUndefined();
    expect(held.text).toMatch(/Thresholds\n {2}✓ p95<30s\s+p95 [\d.]+m?s\n {2}✓ errors<25%\s+errors 20%/);

    const failed = await run(['p95<30s', 'errors<1%']);
    expect(failed.exit).toBeInstanceOf(ExitWithCode);
    // k6's ThresholdsHaveFailed: a CI job tells a missed objective from a run that measured nothing (1).
    expect((failed.exit as ExitWithCode).exitCode).toBe(99);
    expect((failed.exit as ExitWithCode).message).toBe('batchline bench: threshold errors<1% failed: errors 20%');
    expect(failed.text).toMatch(/✗ errors<1%\s+errors 20%/);

    // k6's thresholds as a script holds them, judged on the same run.
    const k6 = await run(["http_req_duration: ['p(95)<1000']", "'http_req_failed': ['rate<0.01']"]);
    expect((k6.exit as ExitWithCode).exitCode).toBe(99);
    expect(k6.text).toMatch(/✓ p95<1s\s+p95 [\d.]+ms\n {2}✗ errors<1%\s+errors 20%/);

    // Nothing listens: the run measured nothing, which is 1 whatever the thresholds say.
    const refused = await run(['errors<1%'], 'http://127.0.0.1:1/');
    expect((refused.exit as ExitWithCode).exitCode).toBe(1);
    expect((refused.exit as ExitWithCode).message).toMatch(
      /^batchline bench: no request succeeded .*\nbatchline bench: threshold errors<1% failed: errors 100%$/,
    );
  });
});
