/// <reference lib="dom.iterable" />
/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import type { Browser, Page } from 'puppeteer-core';
import { CHROMIUM, launchChromium as launchBrowser, type OpenBrowser } from '../../../scripts/lib/chromium.js';

export type { OpenBrowser };

/** Why the browser tests cannot run here, or undefined when they can. */
export const chromiumMissing: string | undefined = existsSync(CHROMIUM)
  ? undefined
  : `skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does, or set BATCHLINE_CHROMIUM)`;
if (chromiumMissing !== undefined) console.warn(`HTML report browser tests ${chromiumMissing}`);

/**
 * How long Chromium may take to print its DevTools address. Its first start on a fresh machine
 * took 29.6 s here (a warm start takes 0.4 s), past puppeteer's 30 s default under a loaded CI.
 */
const LAUNCH_TIMEOUT_MS = 150_000;
/** For a beforeAll that launches Chromium: its launch plus the work around it. */
export const BROWSER_HOOK_TIMEOUT_MS = LAUNCH_TIMEOUT_MS + 60_000;

/** Headless Chromium with no network of its own, on a fresh profile, given time for a first start. */
export function launchChromium(): Promise<OpenBrowser> {
  return launchBrowser(LAUNCH_TIMEOUT_MS);
}

/** A page that records every console error, uncaught exception and request that left the file. */
export async function openReport(
  browser: Browser,
  file: string,
  width = 1280,
  height = 1000,
): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warn')
      problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${(error as Error).message}`));
  page.on('request', (request) => {
    if (!request.url().startsWith('file:') && !request.url().startsWith('data:') && !request.url().startsWith('blob:'))
      problems.push(`network request: ${request.url()}`);
  });
  await page.setViewport({ width, height });
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  return { page, problems };
}

/** Every chart's id and the values it drew, as the page reports them. */
export async function drawnCharts(
  page: Page,
): Promise<{ id: string; points: number; width: number; height: number }[]> {
  return page.evaluate(() =>
    (
      window as unknown as { batchline: { drawn(): { id: string; points: number; width: number; height: number }[] } }
    ).batchline.drawn(),
  );
}

/**
 * Takes a full-page screenshot, decodes it with the browser's own PNG decoder in a blank page,
 * and counts, inside each chart's box, the pixels that are coloured (not white, grey or black
 * text): the lines and bars that were drawn.
 */
export async function colouredPixelsPerChart(browser: Browser, page: Page): Promise<Record<string, number>> {
  const boxes = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('figure.chart[data-chart-id] canvas')].map((canvas) => {
      const r = canvas.getBoundingClientRect();
      return {
        id: (canvas.closest('figure') as HTMLElement).dataset.chartId as string,
        x: r.left + window.scrollX,
        y: r.top + window.scrollY,
        width: r.width,
        height: r.height,
      };
    }),
  );
  const png = Buffer.from(await page.screenshot({ fullPage: true, type: 'png' })).toString('base64');
  const blank = await browser.newPage();
  try {
    return await blank.evaluate(
      async (base64: string, regions: typeof boxes) => {
        const image = new Image();
        image.src = `data:image/png;base64,${base64}`;
        await image.decode();
        const canvas = document.createElement('canvas');
        canvas.width = image.width;
        canvas.height = image.height;
        const ctx = canvas.getContext('2d') as CanvasRenderingContext2D;
        ctx.drawImage(image, 0, 0);
        const counts: Record<string, number> = {};
        for (const region of regions) {
          const data = ctx.getImageData(
            Math.round(region.x),
            Math.round(region.y),
            Math.max(1, Math.round(region.width)),
            Math.max(1, Math.round(region.height)),
          ).data;
          let coloured = 0;
          for (let i = 0; i < data.length; i += 4) {
            const [r, g, b] = [data[i] as number, data[i + 1] as number, data[i + 2] as number];
            if (Math.max(r, g, b) - Math.min(r, g, b) > 40) coloured++;
          }
          counts[region.id] = coloured;
        }
        return counts;
      },
      png,
      boxes,
    );
  } finally {
    await blank.close();
  }
}
