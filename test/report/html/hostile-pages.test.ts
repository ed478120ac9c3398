import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort, startServer, statusServer, type TestServer } from '../../bench/servers.js';
import { tempDir } from '../../temp-dir.js';
import { batchline as batchlineCli } from '../../batchline-cli.js';
import {
  BROWSER_HOOK_TIMEOUT_MS,
  chromiumMissing,
  colouredPixelsPerChart,
  launchChromium,
  openReport,
  type OpenBrowser,
} from './browser.js';

const dir = tempDir('batchline-html-hostile-');
const file = (name: string): string => join(dir, name);
/** A run that fails (no 2xx answer: exit 1) still writes its page. */
const batchline = (args: string[]) => batchlineCli(args, 1);

/** Markup and script in every string a user or a server hands to a page; none of it may run. */
const PAYLOAD = `x'"<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>$(id)\${7*7}\u2028<!--<script>`;
/** The same in a file's name, which cannot hold a slash. */
const NAME = `${PAYLOAD.replaceAll('/', '_')}\nline 2.txt`;

interface PageText {
  pwned: unknown;
  images: number;
  /** Script elements other than the page's JSON that mention the payload. */
  injectedScripts: number;
  text: string;
  h1: string;
  footer: string;
  facts: Record<string, string>;
  missing: string[];
  /** Each table's rows, cell by cell. */
  tables: string[][][];
  drawn: { id: string; points: number }[];
}

async function pageText(page: Page): Promise<PageText> {
  return page.evaluate(() => {
    const w = window as unknown as { __pwned?: unknown; batchline: { drawn(): { id: string; points: number }[] } };
    return {
      pwned: w.__pwned,
      images: document.images.length,
      injectedScripts: [...document.scripts].filter(
        (s) => s.type !== 'application/json' && (s.textContent ?? '').includes('__pwned'),
      ).length,
      // biome-ignore lint/performance/useDomNodeTextContent: what the reader sees, not the scripts' text
      text: document.body.innerText,
      h1: document.querySelector('h1')?.textContent ?? '',
      footer: document.querySelector('footer code')?.textContent ?? '',
      facts: Object.fromEntries(
        [...document.querySelectorAll('.fact')].map((f) => [
          f.querySelector('.label')?.textContent ?? '',
          f.querySelector('.value')?.textContent ?? '',
        ]),
      ),
      missing: [...document.querySelectorAll('figure.chart.missing')].map((f) => f.textContent ?? ''),
      tables: [...document.querySelectorAll('table')].map((t) =>
        [...t.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent ?? '')),
      ),
      drawn: w.batchline.drawn().map((c) => ({ id: c.id, points: c.points })),
    };
  });
}

describe.skipIf(chromiumMissing !== undefined)('report pages given hostile strings and degenerate runs', () => {
  let chromium: OpenBrowser;
  let hostile: TestServer;
  let ok: TestServer;
  let failing: TestServer;
  const pages = new Map<string, PageText>();
  const problems = new Map<string, string[]>();

  beforeAll(async () => {
    // A server whose every string is markup: its /v1/stats refusal, its status lines.
    hostile = await startServer((req, res) => {
      res.statusCode = req.url === '/v1/stats' ? 500 : 429;
      res.statusMessage = 'Too <b>Many</b>';
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ error: { message: PAYLOAD } }));
    });
    ok = await startServer((_req, res) => res.end('ok'));
    failing = await statusServer(500);
    const closed = await refusedPort();
    chromium = await launchChromium();
    const arrivals = file(NAME);
    writeFileSync(arrivals, '0\n5\n10\n');
    const bench = ['bench', '-n', '4', '--warmup', '0', '-c', '1'];
    // Every request expires in the queue: nothing is answered ok.
    const expiring = ['simulate', '--rate', '300', '--requests', '100', '--max-queue-size', '1'];
    expiring.push('--model-latency-ms', '5000', '--request-timeout-ms', '1');
    await Promise.all([
      batchline([...bench, '--html', file('hostile.html'), `${hostile.url}v1/infer?q=${PAYLOAD}`]),
      batchline(['simulate', '--arrivals', arrivals, '--html', file('arrivals.html')]),
      // One request: hundreds of intervals, a value in one of them.
      batchline(['simulate', '--requests', '1', '--html', file('one.html')]),
      batchline([...expiring, '--html', file('expired.html')]),
      batchline([...expiring, '--sweep', 'max-batch-size=4,8', '--html', file('sweep-expired.html')]),
      batchline([
        ...bench,
        '--json',
        file('refused.json'),
        '--html',
        file('refused.html'),
        `http://127.0.0.1:${closed}/`,
      ]),
      batchline([...bench, '--json', file('ok.json'), ok.url]),
      batchline([
        'bench',
        '--sweep',
        '20,40',
        '-d',
        '0.3s',
        '--warmup',
        '0',
        '--html',
        file('sweep-500.html'),
        failing.url,
      ]),
    ]);
    await batchline(['bench', 'compare', file('refused.json'), file('ok.json'), '--html', file('compare.html')]);
    for (const name of [
      'hostile.html',
      'arrivals.html',
      'one.html',
      'expired.html',
      'sweep-expired.html',
      'sweep-500.html',
      'refused.html',
      'compare.html',
    ]) {
      const opened = await openReport(chromium.browser, file(name));
      pages.set(name, await pageText(opened.page));
      pixels.set(name, await colouredPixelsPerChart(chromium.browser, opened.page));
      problems.set(name, opened.problems);
      await opened.page.close();
    }
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await chromium?.close();
    await hostile?.close();
    await ok?.close();
    await failing?.close();
  });

  const page = (name: string): PageText => pages.get(name) as PageText;
  const pixels = new Map<string, Record<string, number>>();

  it('renders every page without a console error, NaN, Infinity or undefined, and no injected markup', () => {
    for (const [name, text] of pages) {
      expect(problems.get(name), name).toEqual([]);
      expect(text.pwned, name).toBeUndefined();
      expect(text.images, name).toBe(0);
      expect(text.injectedScripts, name).toBe(0);
      expect(text.text, name).not.toMatch(/\b(NaN|Infinity|undefined)\b/);
      for (const chart of text.drawn) expect(chart.points, `${name}: ${chart.id}`).toBeGreaterThan(0);
    }
  });

  it("shows a server's refusal and a file's name as text, as they were", () => {
    expect(page('hostile.html').missing.join('\n')).toContain(PAYLOAD);
    expect(page('arrivals.html').h1).toContain(NAME);
    // The footer's command stays on one line, so what is copied is what was run.
    expect(page('arrivals.html').footer).not.toContain('\n');
    expect(page('arrivals.html').footer).toContain("\\nline 2.txt'");
  });

  it('draws a value that has no neighbour, which a line alone leaves invisible', () => {
    const one = pixels.get('one.html') as Record<string, number>;
    for (const id of ['latency-over-time', 'batch-size-over-time']) expect(one[id], id).toBeGreaterThan(20);
  });

  it('shows no latency where nothing was answered, rather than 0 ms', () => {
    for (const name of ['expired.html', 'refused.html']) {
      const latency = Object.entries(page(name).facts).filter(([label]) => label.startsWith('latency'));
      expect(latency.length, name).toBeGreaterThan(0);
      for (const [label, value] of latency) expect(value, `${name}: ${label}`).toBe('–');
      expect(page(name).missing.join('\n'), name).toContain('Latency by percentile');
    }
    expect(page('compare.html').facts['p50 A → B']).toMatch(/^– → \d/);
    expect(page('expired.html').tables[0]).toEqual([
      ['latency', ...Array(7).fill('–')],
      ['queue wait', ...Array(7).fill('–')],
    ]);
    // The sweep's configurations: p50, p95, p99 and mean batch.
    for (const row of page('sweep-expired.html').tables[0] ?? []) expect(row.slice(3, 7)).toEqual(Array(4).fill('–'));
    // bench's steps: p50 and p99 of 2xx answers (there were none).
    for (const row of page('sweep-500.html').tables[0] ?? []) expect(row.slice(3, 5)).toEqual(['–', '–']);
    expect(page('sweep-expired.html').missing.join('\n')).toContain('No configuration answered a request ok');
  });
});

describe('the scripts and styles a page inlines', () => {
  const built = (name: string): string =>
    readFileSync(new URL(`../../../dist/browser/${name}`, import.meta.url), 'utf8');

  it('hold no <!-- or <script: in an inline script they make the parser skip its end tag (render-html escapes </script only)', () => {
    for (const name of ['report.js', 'timeline.js', 'model-panel.js'])
      expect(built(name), name).not.toMatch(/<!--|<script/i);
  });

  it('hold no </style, which would end the inline style early', () => {
    expect(built('report.css')).not.toMatch(/<\/style/i);
  });
});
