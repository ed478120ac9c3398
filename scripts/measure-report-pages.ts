/**
 * `node dist/scripts/measure-report-pages.js`: what the simulate report page costs, for
 * docs/reports.md. For runs of growing size: the time `simulate --html` takes beside the same
 * run without it, the page's size, and in headless Chromium the time the page takes to open and
 * to simulate the run again for its timeline (with the events it keeps). Needs Debian's
 * chromium (or BATCHLINE_CHROMIUM).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { launchChromium } from './lib/chromium.js';

const run = promisify(execFile);
const bin = new URL('../../bin/batchline.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'batchline-measure-pages-'));

async function timed(args: string[]): Promise<number> {
  const started = performance.now();
  await run(process.execPath, [bin, ...args], { maxBuffer: 256 * 1024 * 1024 });
  return performance.now() - started;
}

const { browser, close } = await launchChromium();
/** The page's own globals, as the timeline script defines them. */
interface PageGlobals {
  batchlineTimeline: { run(): boolean; events(): unknown[] };
  document: { querySelector(selector: string): { textContent: string | null } | null };
}

console.log('requests  simulate  +--html  page KiB  opened in  timeline');
for (const requests of [1_000, 10_000, 50_000, 200_000, 1_000_000]) {
  const file = join(dir, `r${requests}.html`);
  const base = ['simulate', '--rate', '300', '--requests', String(requests)];
  const plain = await timed(base);
  const withHtml = await timed([...base, '--html', file]);
  const page = await browser.newPage();
  const opened = performance.now();
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  const openMs = performance.now() - opened;
  // Over the auto-run limit the page waits for "Run in this page"; press it.
  const pressed = await page.evaluate(() => {
    const g = globalThis as unknown as PageGlobals;
    if (g.batchlineTimeline.events().length > 0) return false;
    return g.batchlineTimeline.run();
  });
  const note = await page.evaluate(
    () => (globalThis as unknown as PageGlobals).document.querySelector('#timeline .run-note')?.textContent ?? '',
  );
  await page.close();
  console.log(
    `${String(requests).padStart(8)}  ${(plain / 1000).toFixed(2).padStart(6)} s  ${(withHtml / 1000).toFixed(2).padStart(5)} s  ${(statSync(file).size / 1024).toFixed(0).padStart(8)}  ${openMs.toFixed(0).padStart(6)} ms  ${pressed ? '(pressed Run) ' : ''}${note}`,
  );
}
await close();
rmSync(dir, { recursive: true, force: true });
