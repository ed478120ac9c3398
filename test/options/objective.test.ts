import { describe, expect, it } from 'vitest';
import { parseSlo as parseBenchSlo } from '../../src/bench/sweep.js';
import { parseThresholds } from '../../src/bench/plan-from-options.js';
import { evaluateObjective, parseObjective, type ObjectiveFigures } from '../../src/options/objective.js';
import { parseSlo as parseSimulateSlo } from '../../src/simulate/slo.js';

const figures = (p95: number, lossRatio: number, count = 100): ObjectiveFigures => ({
  latency: { count, p50: p95 / 2, p90: p95 * 0.9, p95, p99: p95 * 1.2, p999: p95 * 1.5, mean: p95 / 2, max: p95 * 2 },
  lossRatio,
});

describe('one objective grammar for bench --slo, bench --threshold and simulate --slo', () => {
  it.each([
    'p99<50ms,loss<1%',
    'p95<50ms',
    'p99.9<0.2s & errors<0.5%',
    'p(95)<200',
    'med<20 & avg<30 & p(99.9)<1s',
    'mean<=10 and max<1s',
    'p50<10,p90<20,p99<80ms',
  ])('%s parses in all three', (text) => {
    const bench = parseBenchSlo(text);
    const simulate = parseSimulateSlo(text);
    const [threshold] = parseThresholds([text], undefined);
    // The same clauses; only the default loss bound differs (bench 1 %, simulate 0.1 %).
    const latency = (o: typeof bench) => o.clauses.filter((c) => c.kind === 'latency');
    expect(latency(bench)).toEqual(latency(simulate));
    expect(latency(threshold!)).toEqual(latency(simulate));
  });

  it('reads units: bare latency bounds are ms, s and us convert, ratios take % or a fraction', () => {
    const o = parseObjective('p95<200, p99<1.5s, max<=900us, errors<1%, loss<0.02', { flag: '--slo' });
    expect(o.clauses.map((c) => (c.kind === 'latency' ? c.boundMs : c.bound))).toEqual([200, 1500, 0.9, 0.01, 0.02]);
    expect(o.text).toBe('p95<200ms & p99<1500ms & max<=0.9ms & errors<1% & loss<2%');
  });

  it("adds the command's default ratio bound only when the text has none", () => {
    expect(parseBenchSlo('p99<1s').text).toBe('p99<1s & errors≤1%');
    expect(parseSimulateSlo('p99<1s').text).toBe('p99<1s & loss≤0.1%');
    expect(parseSimulateSlo('p99<1s,loss<5%').text).toBe('p99<1s & loss<5%');
  });

  it('judges each clause, and a latency clause over no successful answer fails', () => {
    const objective = parseObjective('p95<100ms,errors<1%', { flag: '--threshold' });
    expect(evaluateObjective(objective, figures(90, 0.005)).map((r) => r.met)).toEqual([true, true]);
    expect(evaluateObjective(objective, figures(100, 0.01)).map((r) => r.met)).toEqual([false, false]);
    expect(evaluateObjective(objective, figures(0, 1, 0))[0]).toMatchObject({ met: false, actual: undefined });
  });

  it.each([
    ['p97<1s', "'p97' is not a metric"],
    ['p99<fast', 'is not metric<value'],
    ['errors<5ms', 'a ratio takes % or a fraction'],
    ['p99<2h', 'a latency bound takes us, ms, s or m'],
    ['errors<150%', 'at most 100%'],
    // No run has fewer than no errors: the threshold failed every run (exit 99), where p99<0 is refused.
    ['errors<0', "'errors<0' is never met: fewer than no errors; for none, errors<=0"],
    ['errors<0%', "'errors<0%' is never met"],
    ['', 'it is empty'],
  ])('refuses %j naming the flag and the grammar', (text, why) => {
    expect(() => parseObjective(text, { flag: '--slo' })).toThrow(why);
    expect(() => parseObjective(text, { flag: '--slo' })).toThrow(/--slo: got .*expected clauses such as p99<50ms/);
  });

  it('lets a threshold bound only errors, but not an SLO', () => {
    expect(parseThresholds(['errors<1%'], undefined)[0]?.text).toBe('errors<1%');
    expect(() => parseBenchSlo('errors<1%')).toThrow(/bounds no latency statistic/);
  });

  // k6's thresholds as a script holds them: `http_req_duration: p(95)<500` was refused with
  // "is not metric<value".
  it.each([
    ['http_req_duration: p(95)<500', 'p95<500ms'],
    ["'http_req_duration': ['p(95)<500']", 'p95<500ms'],
    [
      "http_req_duration: ['p(95)<500', 'p(99.9) < 1000', 'avg<200', 'med<150', 'max<=2000']",
      'p95<500ms & p999<1s & mean<200ms & p50<150ms & max<=2s',
    ],
    ['http_req_failed: rate<0.01', 'errors<1%'],
    ["{ http_req_failed: ['rate<0.01'], http_req_duration: ['p(99)<1s'] }", 'errors<1% & p99<1s'],
    ["'http_req_duration{expected_response:true}': ['p(90)<300']", 'p90<300ms'],
    ['"http_req_duration": ["p(50)<0.5s"]', 'p50<500ms'],
  ])("reads k6's threshold %j as %j", (text, clauses) => {
    const [threshold] = parseThresholds([text], undefined);
    expect(threshold?.text).toBe(clauses);
  });

  it("judges k6's http_req_duration on the 2xx latency and http_req_failed's rate as errors", () => {
    const [threshold] = parseThresholds(
      ["http_req_duration: ['p(95)<100'], http_req_failed: ['rate<0.01']"],
      undefined,
    );
    expect(evaluateObjective(threshold!, figures(90, 0.005)).map((r) => r.met)).toEqual([true, true]);
    expect(evaluateObjective(threshold!, figures(120, 0.02)).map((r) => r.met)).toEqual([false, false]);
  });

  it.each([
    ['http_reqs: rate>100', "k6's 'http_reqs' is not a figure bench judges"],
    ['checks: rate>0.99', "k6's 'checks' is not a figure bench judges"],
    ['http_req_duration: p(95)>500', 'upper bounds, < or <=, not >'],
    ['http_req_failed: rate==0', 'upper bounds, < or <=, not =='],
    [
      'http_req_duration: p(99.99)<500',
      'http_req_duration takes p(50), p(90), p(95), p(99), p(99.9), avg, med or max, not p(99.99)',
    ],
    ['http_req_duration: min<10', 'not min'],
    ['http_req_failed: count<10', 'http_req_failed takes rate, not count'],
    ['http_req_duration{status:200}: p(95)<500', 'bench tags no request'],
    ["http_req_duration: [{ threshold: 'p(95)<500', abortOnFail: true }]", 'is not aggregation<value'],
    ["http_req_duration: { threshold: 'p(95)<500', abortOnFail: true }", 'takes no abortOnFail object'],
    ['http_req_duration: p(95)<fast', "'p95<fast' is not metric<value"],
  ])('refuses k6 threshold %j naming why and the forms it takes', (text, why) => {
    expect(() => parseThresholds([text], undefined)).toThrow(why);
    expect(() => parseThresholds([text], undefined)).toThrow(
      "k6's http_req_duration: ['p(95)<500'] (p(50), p(90), p(95), p(99), p(99.9), avg, med or max, in ms) and http_req_failed: ['rate<0.01']",
    );
  });
});
