/// <reference lib="dom" />
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const dir = tempDir('batchline-html-simulate-');

interface PageTimeline {
  run(): boolean;
  form: { set(key: string, value: string): void; reset(): void };
  eventsText(): string;
  events(): unknown[];
  report(): unknown;
  error(): string | undefined;
  view: { position: number };
}

function timeline(page: Page) {
  return {
    set: (key: string, value: string) =>
      page.evaluate(
        (k, v) => (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline.form.set(k, v),
        key,
        value,
      ),
    run: () => page.evaluate(() => (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline.run()),
    eventsText: () =>
      page.evaluate(() => (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline.eventsText()),
    report: () =>
      page.evaluate(() => (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline.report()),
    error: () =>
      page.evaluate(() => (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline.error()),
    position: () =>
      page.evaluate(() => (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline.view.position),
  };
}

describe.skipIf(chromiumMissing !== undefined)('simulate --html in headless Chromium', () => {
  let chromium: OpenBrowser;
  const report = join(dir, 'overload.html');

  beforeAll(async () => {
    chromium = await launchChromium();
    // Overloaded, so every chart has something to show: rejections, a full queue, full batches.
    await batchline([
      'simulate',
      '--rate',
      '500',
      '--requests',
      '3000',
      '--max-queue-size',
      '20',
      '--request-timeout-ms',
      '120',
      '--html',
      report,
    ]).catch((e: { stdout?: string }) => {
      if (!readFileSync(report, 'utf8').includes('<html')) throw e;
    });
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await chromium?.close();
  });

  it('is one file that needs no network', () => {
    const html = readFileSync(report, 'utf8');
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!www\.w3\.org)/);
  });

  it('draws every chart with data, without a console error, and the screenshot shows them', async () => {
    const { page, problems } = await openReport(chromium.browser, report);
    const charts = await drawnCharts(page);
    expect(charts.map((c) => c.id)).toEqual([
      'latency-over-time',
      'latency-distribution',
      'throughput-over-time',
      'batch-size-over-time',
      'batch-size-histogram',
      'queue-depth-over-time',
    ]);
    for (const chart of charts) expect(chart.points, chart.id).toBeGreaterThan(0);
    const pixels = await colouredPixelsPerChart(chromium.browser, page);
    for (const chart of charts) expect(pixels[chart.id], `coloured pixels in ${chart.id}`).toBeGreaterThan(200);
    expect(await timeline(page).position()).toBe(0);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expect(await timeline(page).position()).toBe(2);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('re-runs the form on the bundled core and gets exactly what simulate --events prints', async () => {
    const arrivals = [0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 40, 41, 41.5, 90, 90, 90, 90, 90, 90, 91, 200];
    const flags = {
      maxBatchSize: '3',
      batchWindowMs: '4',
      maxQueueSize: '4',
      requestTimeoutMs: '60',
      latency: '5+2n',
      instances: '2',
      latencyCv: '0.3',
      seed: '7',
    };
    const { page, problems } = await openReport(chromium.browser, report);
    const t = timeline(page);
    for (const [key, value] of Object.entries(flags)) await t.set(key, value);
    await t.set('requests', '');
    await t.set('rate', '');
    await t.set('arrivals', arrivals.join(' '));
    expect(await t.run()).toBe(true);
    const pageEvents = await t.eventsText();
    const pageReport = await t.report();

    const file = join(dir, 'arrivals.txt');
    writeFileSync(file, `${arrivals.join('\n')}\n`);
    const cliArgs = [
      'simulate',
      '--max-batch-size',
      '3',
      '--batch-window-ms',
      '4',
      '--max-queue-size',
      '4',
      '--request-timeout-ms',
      '60',
      '--instances',
      '2',
      '--seed',
      '7',
      '--latency',
      '5+2n',
      '--latency-cv',
      '0.3',
      '--arrivals',
      file,
    ];
    const cliEvents = await batchline([...cliArgs, '--events']);
    const cliReport = JSON.parse(await batchline([...cliArgs, '--json', '-'])) as { config: { arrivals: string } };
    expect(pageEvents.split('\n').length).toBeGreaterThan(40);
    expect(cliEvents.startsWith(pageEvents)).toBe(true);
    expect(cliEvents.slice(pageEvents.length)).toMatch(/^\nbatchline simulate · seed 7/);
    // The same report, but for the name of the arrivals file.
    expect({
      ...(pageReport as object),
      config: { ...(pageReport as { config: object }).config, arrivals: '' },
    }).toEqual({ ...cliReport, config: { ...cliReport.config, arrivals: '' } });
    // The charts were drawn again from the page's own run.
    expect((await drawnCharts(page)).every((c) => c.points > 0)).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("refuses a bad value with the command line's own message", async () => {
    const { page } = await openReport(chromium.browser, report);
    const t = timeline(page);
    await t.set('maxBatchSize', '0');
    expect(await t.run()).toBe(false);
    expect(await t.error()).toBe("invalid option --max-batch-size: got '0', expected an integer from 1 to 4096");
    await page.close();
  });
});

describe.skipIf(chromiumMissing !== undefined)('simulate --sweep --html in headless Chromium', () => {
  let chromium: OpenBrowser;
  const report = join(dir, 'sweep.html');

  beforeAll(async () => {
    chromium = await launchChromium();
    await batchline([
      'simulate',
      '--rate',
      '600',
      '--latency',
      '4+1n',
      '--requests',
      '5000',
      '--sweep',
      'max-batch-size=1,8,16',
      'batch-window-ms=0,5',
      '--slo',
      'p99<50ms',
      '--html',
      report,
    ]);
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await chromium?.close();
  });

  it('plots every configuration against the objective and steps through the recommended one', async () => {
    const { page, problems } = await openReport(chromium.browser, report);
    const charts = await drawnCharts(page);
    expect(charts.map((c) => c.id)).toEqual(['throughput-latency', 'batch-size-by-configuration']);
    for (const chart of charts) expect(chart.points, chart.id).toBeGreaterThan(0);
    const pixels = await colouredPixelsPerChart(chromium.browser, page);
    for (const chart of charts) expect(pixels[chart.id], chart.id).toBeGreaterThan(100);
    const labels = await page.evaluate(() =>
      (
        window as unknown as { batchline: { data: { charts: { series: { label: string }[] }[] } } }
      ).batchline.data.charts[0]?.series.map((s) => s.label),
    );
    expect(labels).toEqual(['p99 (every configuration)', 'Pareto frontier', 'objective p99 < 50 ms']);
    // The timeline replays the recommended configuration (max-batch-size 16), simulated in the page.
    const { maxBatchSize, events } = await page.evaluate(() => {
      const t = (
        window as unknown as {
          batchlineTimeline: { events(): unknown[]; report(): { config: { max_batch_size: number } } };
        }
      ).batchlineTimeline;
      return { maxBatchSize: t.report().config.max_batch_size, events: t.events().length };
    });
    expect(maxBatchSize).toBe(16);
    expect(events).toBeGreaterThan(10_000);
    expect(problems).toEqual([]);
    await page.close();
  });
});
