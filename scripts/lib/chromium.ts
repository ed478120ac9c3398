import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';

/** Debian's chromium (installed by .ci/run); BATCHLINE_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.BATCHLINE_CHROMIUM ?? '/usr/bin/chromium';

export interface OpenBrowser {
  browser: Browser;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/**
 * Headless Chromium with no network of its own, on a fresh profile: the report pages' tests and
 * `measure-report-pages` open the pages in the same browser. `launchTimeoutMs`: how long it may
 * take to start (puppeteer's own 30 s when not given).
 */
export async function launchChromium(launchTimeoutMs?: number): Promise<OpenBrowser> {
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = mkdtempSync(join(tmpdir(), 'batchline-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: launchTimeoutMs,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
