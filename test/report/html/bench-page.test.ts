import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer as PlainServer } from '../../bench/servers.js';
import { startTestServer, type TestServer } from '../../serve/test-server.js';
import {
  chromiumMissing,
  colouredPixelsPerChart,
  drawnCharts,
  BROWSER_HOOK_TIMEOUT_MS,
  launchChromium,
  openReport,
  type OpenBrowser,
} from './browser.js';
import { tempDir } from '../../temp-dir.js';
import { batchline } from '../../batchline-cli.js';

const dir = tempDir('batchline-html-bench-');
const file = (name: string): string => join(dir, name);

describe.skipIf(chromiumMissing !== undefined)('bench --html in headless Chromium', () => {
  let chromium: OpenBrowser;
  let server: TestServer;
  let plain: PlainServer;

  beforeAll(async () => {
    // A batchline server whose batches take 4 ms: at 400 req/s its queue and batch sizes move.
    server = await startTestServer({ modelLatencyMs: 4, maxBatchSize: 8 });
    plain = await startServer((_req, res) => res.end('ok'));
    chromium = await launchChromium();
    const target = `${server.url}/v1/infer`;
    await batchline([
      'bench',
      '--rate',
      '400',
      '--duration',
      '2s',
      '--warmup',
      '300ms',
      '--connections',
      '32',
      '--json',
      file('a.json'),
      '--html',
      file('run.html'),
      target,
    ]);
    await batchline([
      'bench',
      '--rate',
      '300',
      '--duration',
      '1s',
      '--warmup',
      '200ms',
      '--connections',
      '32',
      '--json',
      file('b.json'),
      target,
    ]);
    await batchline(['bench', 'compare', file('a.json'), file('b.json'), '--html', file('compare.html')]);
    await batchline([
      'bench',
      '--sweep',
      '100,300',
      '--duration',
      '1s',
      '--warmup',
      '200ms',
      '--connections',
      '32',
      '--slo',
      'p99<2s',
      '--html',
      file('sweep.html'),
      target,
    ]);
    // 2 s, as run.html: a 1 s run on a host stalled for a second drew its latency over time in 62
    // and 68 coloured pixels, short of the 100 that tell a drawn line; run.html's 2 s run passed.
    await batchline([
      'bench',
      '--rate',
      '200',
      '--duration',
      '2s',
      '--warmup',
      '200ms',
      '--html',
      file('plain.html'),
      plain.url,
    ]);
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await chromium?.close();
    await server?.close();
    await plain?.close();
  });

  async function check(name: string, expected: string[]): Promise<void> {
    const { page, problems } = await openReport(chromium.browser, file(name));
    const charts = await drawnCharts(page);
    expect(charts.map((c) => c.id)).toEqual(expected);
    for (const chart of charts) expect(chart.points, `${name}: ${chart.id}`).toBeGreaterThan(0);
    const pixels = await colouredPixelsPerChart(chromium.browser, page);
    for (const id of expected) expect(pixels[id], `${name}: coloured pixels in ${id}`).toBeGreaterThan(100);
    expect(problems).toEqual([]);
    await page.close();
  }

  it("draws a run second by second, its distribution, and the server's batches and queue", async () => {
    await check('run.html', [
      'latency-over-time',
      'latency-distribution',
      'throughput-over-time',
      'batch-size-over-time',
      'batch-size-histogram',
      'queue-depth-over-time',
    ]);
    expect(readFileSync(file('run.html'), 'utf8')).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it('draws a sweep as a throughput-latency curve with the objective and the frontier', async () => {
    await check('sweep.html', ['throughput-latency', 'rate-achieved', 'latency-distribution']);
    const html = readFileSync(file('sweep.html'), 'utf8');
    expect(html).toContain('Pareto frontier');
    expect(html).toContain('objective p99');
  });

  it('draws a comparison of two saved runs', async () => {
    await check('compare.html', ['latency-distribution']);
    expect(readFileSync(file('compare.html'), 'utf8')).toContain('verdict: ');
  });

  it('says why the batch charts are missing for a target that is not a batchline server', async () => {
    await check('plain.html', ['latency-over-time', 'latency-distribution', 'throughput-over-time']);
    expect(readFileSync(file('plain.html'), 'utf8')).toContain('the target is not a batchline server');
  });
});
