import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { emptyCounts } from '../../src/bench/recorder.js';
import { toBenchJson } from '../../src/bench/report-json.js';
import { formatReport } from '../../src/bench/report-text.js';
import { trendOf } from '../../src/bench/build-result.js';
import { latencySpanText } from '../../src/bench/result-warnings.js';
import { bestRate, formatSweep, parseSlo, runSweep, stepVerdict } from '../../src/bench/sweep.js';
import { addPoint } from '../../src/bench/trend.js';
import type { TestServer as ServeServer } from '../serve/test-server.js';
import { serveOf100RequestsPerSecond, sweepPlanFor } from './known-capacity.js';
import { planFor } from './plan-helper.js';
import { resultOf } from './result-fixture.js';
import { fifoServer, refusedPort, startServer, statusServer, type TestServer } from './servers.js';

let server: TestServer | undefined;
let serve: ServeServer | undefined;
afterEach(async () => {
  await server?.close();
  await serve?.close();
  server = undefined;
  serve = undefined;
});

describe('open-loop rates against a server of known capacity', () => {
  it('counts only what was answered inside the window it divides by, and reports the late answers apart', async () => {
    // 200 req/s at most; asked for 300 for 1 s, it answers ~200 in the window and the rest after.
    server = await fifoServer(5);
    const { result } = await runBench(
      planFor(server.url, { rate: '300', duration: '1s', warmup: '200ms', connections: '400', timeout: '10s' }),
    );
    expect(result.requests.sent).toBe(300);
    expect(result.requests.completed).toBe(300);
    expect(result.throughputRps).toBeLessThan(215);
    expect(result.goodputRps).toBeLessThan(215);
    expect(result.requests.late).toBeGreaterThan(50);
    expect(result.durationS).toBe(1);
    expect(result.drainS).toBeGreaterThan(0.2);
    expect(result.trend?.sustained).toBe(false);
    expect(result.trend?.backlogGrowth).toBeGreaterThan(50);
    const json = toBenchJson(result);
    expect(json.duration_s).toBe(1);
    // In the window: the measured answers not late, and the warm-up's answered after it began
    // (at most its 60 sends), however fast or slow this machine answered them.
    const measuredInWindow = json.requests.completed - json.requests.late;
    expect(json.throughput_rps).toBeGreaterThanOrEqual(measuredInWindow / json.duration_s - 0.01);
    expect(json.throughput_rps).toBeLessThanOrEqual((measuredInWindow + 60) / json.duration_s + 0.01);
    expect(formatReport(result)).toMatch(/late\s+\d+ answered after the window/);
    expect(formatReport(result)).toContain('NOT SUSTAINED');
  });

  it('a sweep never names a rate above the capacity of serve (batch 1 of 10 ms: 100 req/s) as met', async () => {
    serve = await serveOf100RequestsPerSecond();
    // p99 < 20 s holds for a 1 s step at 150 req/s on any host that answers at all: a send not
    // answered within the step's 20 s timeout is an error, not a latency (the backlog is ~0.5 s at
    // the step's end on a quick host; a loaded one took 6.4 s, past the 5 s this SLO was). Only the
    // trend can tell.
    const slo = parseSlo('p99<20s');
    const steps = await runSweep(sweepPlanFor(serve.url, 150), [150], async (step) => (await runBench(step)).result);
    // Above capacity the backlog grows through the step however fast this machine is (a slower
    // one only grows it more); that the sweep names 50 req/s of this server as met is a timing
    // test (sweep-serve.timing.test.ts), since a loaded machine can stall a 1 s step at half capacity.
    expect(stepVerdict(steps[0]!, slo)).toBe('not sustained');
    expect(steps[0]?.latency.p99).toBeLessThan(20_000);
    expect(steps[0]?.throughputRps).toBeLessThan(105);
    expect(bestRate(steps, slo)).toBeUndefined();
    expect(formatSweep(steps, slo)).toMatch(/no rate met p99<20s/);
  });
});

describe('answers that are not 2xx', () => {
  it('reports latency for the 2xx answers and for all answers, and warns when most were not 2xx', async () => {
    // One answer in ten is a slow 200, the rest fast 429s.
    let n = 0;
    server = await startServer((_req, res) => {
      if (n++ % 10 === 0) {
        // 25 ms by the wall clock: a Node timer counts from the loop's cached time, and one armed
        // late in a long turn (a loaded host) fires early by as much as the turn had run.
        const arrivedMs = performance.now();
        const answer = (): void => {
          if (performance.now() - arrivedMs >= 25) res.end('ok');
          else setTimeout(answer, 1);
        };
        setTimeout(answer, 25);
      } else {
        res.statusCode = 429;
        res.end();
      }
    });
    const { result } = await runBench(
      planFor(server.url, { rate: '200', duration: '1s', warmup: '0', connections: '16' }),
    );
    expect(result.requests.ok).toBe(20);
    expect(result.latency.count).toBe(20);
    expect(result.latencyAll.count).toBe(200);
    // The 200s waited 25 ms at the server; how fast the 429s came back is the host's business.
    expect(result.latency.p50).toBeGreaterThanOrEqual(25 - 0.032);
    expect(result.latencyAll.max).toBeGreaterThanOrEqual(result.latency.max);
    expect(result.warnings.join('\n')).toMatch(/180 of 200 answers were not 2xx \(429: 180\)/);
    const text = formatReport(result);
    expect(text).toMatch(/latency 2xx/);
    expect(text).toMatch(/latency all/);
  });

  it("shows and writes the share of sends without a 2xx answer, k6's http_req_failed, beside those never answered", async () => {
    // One answer in ten a 500: the report said '50 answered (45 2xx), 0 failed', which a k6 user
    // reads as no request failed where k6 says http_req_failed 10%.
    let n = 0;
    server = await startServer((_req, res) => {
      res.statusCode = ++n % 10 === 0 ? 500 : 200;
      res.end();
    });
    const { result } = await runBench(planFor(server.url, { connections: '2', requests: '50', warmup: '0' }));
    expect(result.status).toEqual({ 200: 45, 500: 5 });
    const text = formatReport(result);
    expect(text).toContain('requests    50 sent, 50 answered (45 2xx), 0 unanswered\n');
    expect(text).toContain(
      "failed      10% (5 of 50 sends without a 2xx answer; errors in --threshold, k6's http_req_failed)\n",
    );
    expect(toBenchJson(result).failed_ratio).toBe(0.1);
  });

  it('has no 2xx latency when nothing succeeded', async () => {
    server = await statusServer(429);
    const { result } = await runBench(planFor(server.url, { rate: '100', duration: '500ms', warmup: '0' }));
    expect(result.requests.ok).toBe(0);
    expect(result.latency.count).toBe(0);
    expect(result.latencyAll.count).toBe(50);
    // Its row said 0.000 ms in every column, a latency no request had.
    const text = formatReport(result);
    expect(text).toMatch(/latency 2xx +- +- +- +- +- +- +-\n/);
    expect(text).not.toMatch(/latency 2xx.*0\.000/);
    expect(text).toMatch(/latency all +\d/);
  });

  it('does not call a run sustained when nothing it sent was answered', async () => {
    // Every send refused: the report said 'trend sustained' beside 'answered 0.0 req/s (0.0%)'.
    const port = await refusedPort();
    const { result } = await runBench(
      planFor(`http://127.0.0.1:${port}/`, { rate: '100', duration: '300ms', warmup: '0' }),
    );
    expect(result.requests.completed).toBe(0);
    expect(result.requests.errors).toBe(30);
    expect(result.trend?.sustained).toBe(false);
    const text = formatReport(result);
    expect(text).toMatch(/trend +NOT SUSTAINED/);
    expect(text).toMatch(/latency all +- +-/);
  });
});

describe('the late answers', () => {
  it('says how long after the window the last one came, in ms below a second', () => {
    // 4 ms after the window read 'last 0s after it'.
    const late = (drainS: number) =>
      formatReport(
        resultOf([20, 21], { drainS, requests: { sent: 2, completed: 2, ok: 2, late: 1, errors: 0, dropped: 0 } }),
      );
    expect(late(0.004)).toContain('1 answered after the window (last 4 ms after it)');
    expect(late(0.0123)).toContain('(last 12 ms after it)');
    expect(late(2.345)).toContain('(last 2.35s after it)');
  });
});

describe('the report header', () => {
  it('counts one connection and one sender in the singular', async () => {
    // It read 'closed loop, 1 senders; 1 connections'.
    server = await statusServer(200);
    const { result } = await runBench(planFor(server.url, { connections: '1', requests: '3', warmup: '0' }));
    expect(formatReport(result)).toContain('closed loop, 1 sender; 1 connection, pipelining 1, 1 worker;');
  });
});

describe('a run whose --max-in-flight refused sends (k6 maxVUs)', () => {
  // `-R 400 -c 4 --max-in-flight 4 -d 3` against a 20 ms server: 514 sent, 686 refused.
  const capped = (): ReturnType<typeof resultOf> => {
    const counts = emptyCounts();
    counts.sent = 514;
    counts.dropped = 686;
    for (let t = 1000; t <= 4000; t += 6) addPoint(counts.latencyTrend, t, 21);
    return resultOf([20, 21, 22], {
      mode: 'open',
      targetRateRps: 400,
      plannedRateRps: 400,
      durationS: 3,
      sendRateRps: 400,
      throughputRps: 171.33,
      goodputRps: 171.33,
      requests: { sent: 514, completed: 514, ok: 514, late: 0, errors: 0, dropped: 686 },
      status: { 200: 514 },
      trend: trendOf(counts, 3000),
    });
  };

  it('is not sustained: the lines saw only the sends let through, flat, while 57 % were never sent', () => {
    const r = capped();
    expect(r.trend?.refused).toBe(true);
    expect(r.trend?.sustained).toBe(false);
    expect(formatReport(r)).toContain(
      '  trend       NOT SUSTAINED: 686 of 1200 sends refused by --max-in-flight; outstanding 0, latency 0 ms over the window',
    );
    expect(toBenchJson(r).trend).toMatchObject({ refused: true, sustained: false });
    // A handful refused in a burst is not a rate unsent.
    const few = emptyCounts();
    few.sent = 1990;
    few.dropped = 10;
    for (let t = 0; t <= 10_000; t += 5) addPoint(few.latencyTrend, t, 21);
    expect(trendOf(few, 10_000)).toMatchObject({ refused: false, sustained: true });
  });

  it("says 'sent' as the requests line does (handed to a connection), beside the rate scheduled", () => {
    const text = formatReport(capped());
    expect(text).toContain('  sent        171 req/s of 400 req/s scheduled (229 req/s refused by --max-in-flight)\n');
    expect(text).toContain(
      '  requests    514 sent, 514 answered (514 2xx), 0 unanswered, 686 refused by --max-in-flight\n',
    );
    // v2's send_rate_rps keeps its meaning (scheduled); the two added fields say them apart.
    expect(toBenchJson(capped())).toMatchObject({ send_rate_rps: 400, scheduled_rate_rps: 400, sent_rate_rps: 171.33 });
    // Nothing refused: the line is as it was, and the three rates agree.
    const all = resultOf([20], { mode: 'open', targetRateRps: 50, plannedRateRps: 50, sendRateRps: 50 });
    expect(formatReport(all)).toContain('  sent        50.0 req/s\n');
    expect(toBenchJson(all)).toMatchObject({ send_rate_rps: 50, scheduled_rate_rps: 50, sent_rate_rps: 50 });
    expect(toBenchJson(resultOf([20]))).toMatchObject({ scheduled_rate_rps: null, sent_rate_rps: 1 });
  });
});

describe('the latency trend', () => {
  it('is the rise over the sends that were answered, not extrapolated over the whole window', () => {
    // A 15 s window whose answers came back only for the first 3 s of sends, latency rising
    // 5 ms per ms of send time (a queue growing at the client): 15,000 ms over those 3 s, where
    // the slope times the window would say 75,000 ms, more than any latency measured.
    const counts = emptyCounts();
    for (let t = 0; t <= 3000; t += 10) addPoint(counts.latencyTrend, t, 100 + 5 * t);
    const trend = trendOf(counts, 15_000);
    expect(trend.latencyGrowthMs).toBeCloseTo(15_000, 3);
    expect(trend.latencySpanMs).toBe(3000);
    expect(trend.sustained).toBe(false);
    expect(latencySpanText(trend, 15)).toBe(
      'over the first 3 s of its sends (the later ones had no answer by the end of the run)',
    );
    // Answered all through the window: the same line over all of it.
    const whole = emptyCounts();
    for (let t = 0; t <= 15_000; t += 10) addPoint(whole.latencyTrend, t, 20 + 0.001 * t);
    expect(trendOf(whole, 15_000).latencyGrowthMs).toBeCloseTo(15, 3);
    expect(latencySpanText(trendOf(whole, 15_000), 15)).toBe('over the window');
    // Nothing answered: no line, and no growth to speak of.
    const none = trendOf(emptyCounts(), 15_000);
    expect(none.latencyGrowthMs).toBe(0);
    expect(latencySpanText(none, 15)).toBe('(too few of its sends were answered to tell)');
  });
});
