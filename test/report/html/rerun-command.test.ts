import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCHLINE_BIN, runBatchline, succeeded } from '../../batchline-cli.js';
import { tempDir } from '../../temp-dir.js';
import { BROWSER_HOOK_TIMEOUT_MS, chromiumMissing, launchChromium, openReport, type OpenBrowser } from './browser.js';

const run = promisify(execFile);
const dir = tempDir('batchline-html-rerun-');
/** The environment without the variables simulate's options read: what a pasted command gets. */
const cleanEnv = { ...process.env, MAX_BATCH_SIZE: undefined, PIPELINE: undefined };

interface PageTimeline {
  run(): boolean;
  eventsText(): string;
  error(): string | undefined;
}

/** What the page shows and simulates: its own run, then "Run in this page" with the form untouched. */
async function pageRuns(
  chromium: OpenBrowser,
  file: string,
): Promise<{
  command: string;
  ownEvents: string;
  rerunEvents: string;
  rerunError: string | undefined;
  footers: [string, string];
}> {
  const { page, problems } = await openReport(chromium.browser, file);
  const result = await page.evaluate(() => {
    const t = (window as unknown as { batchlineTimeline: PageTimeline }).batchlineTimeline;
    const command = document.querySelector('#timeline .actions code')?.textContent ?? '';
    const ownEvents = t.eventsText();
    const footer = (): string => document.querySelector('footer')?.textContent ?? '';
    const before = footer();
    t.run();
    return {
      command,
      ownEvents,
      rerunEvents: t.eventsText(),
      rerunError: t.error(),
      footers: [before, footer()] as [string, string],
    };
  });
  expect(problems).toEqual([]);
  await page.close();
  return result;
}

/** The command as pasted into bash, `batchline` being this checkout's. */
async function pasted(command: string): Promise<string> {
  const { stdout } = await run(
    'bash',
    ['-c', `batchline() { "${process.execPath}" "${BATCHLINE_BIN}" "$@"; }\n${command}`],
    {
      env: cleanEnv,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return stdout;
}

describe.skipIf(chromiumMissing !== undefined)("the re-run form's command: pasted, it runs the page's run", () => {
  let chromium: OpenBrowser;
  const cases = [
    { name: 'duration', args: ['--rate', '100', '--duration', '2s'], env: {} },
    { name: 'no-pipeline', args: ['--rate', '200', '--requests', '300', '--no-pipeline'], env: {} },
    { name: 'env', args: ['--rate', '200', '--requests', '300'], env: { MAX_BATCH_SIZE: '3', PIPELINE: 'off' } },
  ];

  beforeAll(async () => {
    chromium = await launchChromium();
    await Promise.all(
      cases.map((c) =>
        runBatchline(['simulate', ...c.args, '--html', join(dir, `${c.name}.html`)], {
          env: { ...cleanEnv, ...c.env },
        }).then((run) => succeeded(run)),
      ),
    );
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await chromium?.close();
  });

  it.each(cases)('$name: the command, the page and "Run in this page" give the same events', async (c) => {
    const { command, ownEvents, rerunEvents, rerunError, footers } = await pageRuns(
      chromium,
      join(dir, `${c.name}.html`),
    );
    expect(rerunError).toBeUndefined();
    expect(rerunEvents).toBe(ownEvents);
    // The footer names what made the charts now shown: after a run in the page, that run.
    const setBy = Object.entries(c.env).map(([name, value]) => `${name}=${value} `);
    expect(footers[0]).toContain(`Made by ${setBy.join('')}batchline simulate ${c.args.join(' ')} --html `);
    expect(footers[1]).toContain(`Made by ${command} (run in the page) at `);
    const cli = await pasted(command);
    expect(cli.startsWith(`${ownEvents}\n`), `${command}\n${cli.slice(0, 300)}`).toBe(true);
  });
});
