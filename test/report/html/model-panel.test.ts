/// <reference lib="dom" />
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../../src/core/rng.js';
import { runBatchline, succeeded } from '../../batchline-cli.js';
import { type ServeProcess, spawnServe } from '../../deploy/spawn-serve.js';
import { BROWSER_HOOK_TIMEOUT_MS, chromiumMissing, launchChromium, openReport, type OpenBrowser } from './browser.js';

/**
 * What is typed into the panel's box, by kind. The page sends `{"inputs": TEXT}`, with brackets
 * added when TEXT has none.
 */
const ORDINARY = [
  '0.2, 1.5, -0.3',
  '[0.2, 1.5, -0.3]',
  '{"features": [0.2, 1.5, -0.3]}',
  '1, 1, 1',
  '-1, -1, -1',
  '1, 2, 3',
  '0.1, 0.2, 0.3',
  // A float64 sigmoid would round these one millionth away from the server.
  '-3, -2, -1.3',
  '-3, -1.5, 2.9',
  '-3, -0.9, 0.7',
  '-3, 0.6, -1.3',
  '-3, 1.5, 2.9',
  // Cancels to exactly 0 in float32 (0.5); exact arithmetic would give 0.500074.
  '30000, 0, -10000',
  '1e3, -1e3, 333.3',
];
const ZEROS = ['0, 0, 0', '-0, -0, -0', '0.0, -0.0, 0e10', '0E0, -0E-0, 0.000'];
const SATURATING = [
  '0, 0, 13.8155',
  '0, 0, -13.8155',
  '0, 0, 14.5',
  '0, 0, -14.5',
  '0, 0, 16.6',
  '0, 0, -16.6',
  '0, 0, 17.9',
  '0, 0, -17.9',
  '0, 0, 18',
  '0, 0, -18',
  '0, 0, 18.5',
  '0, 0, -18.5',
  '100, 100, 100',
  '-100, -100, -100',
  '1e6, 0, 0',
  '-1e6, 0, 0',
  '1e20, -1e19, 1e18',
  '-1e20, 1e19, -1e18',
  '1e38, 1e38, 1e38',
  // The sum overflows float32: Infinity, which saturates.
  '3e38, 3e38, 3e38',
  '-3e38, -3e38, -3e38',
  '-3e38, 3e38, 3e38',
  // Cancelling near the top of the range: what float32's fused sum leaves (1, 0, and 0.5).
  '3e38, 3e38, -3e38',
  '-3e38, -3e38, 3e38',
  '3.4028234e38, 3.4028234e38, -3.4028234e38',
  // The largest float32, and a double just under the point where float32 rounds to Infinity.
  '3.4028235e38, 0, 0',
  '3.4028235677973362e38, 0, 0',
];
const TINY = [
  '1e-7, 0, 0',
  '0, 0, 1e-6',
  '0, 0, -1e-6',
  // Around the logits whose score rounds to 0.500001 or 0.499999, and where the label turns.
  '0, 0, 2e-6',
  '0, 0, -2e-6',
  '0, 0, 2.1e-6',
  '0, 0, -2.1e-6',
  '1e-30, -1e-30, 1e-30',
  '1.17549435e-38, 0, 0',
  '1e-40, 1e-40, -1e-40',
  '1.401298464324817e-45, 0, 0',
  '1e-46, -1e-46, 0',
  '-1e-45, 0, 0',
  '5e-324, 0, 0',
];
const REFUSED = [
  // Not numbers.
  '"a", 1, 2',
  'null, 1, 2',
  'true, 0, 0',
  '[1, 2, {}]',
  '[1, [2], 3]',
  '"0.2", "1.5", "-0.3"',
  '"abc"',
  // Not three.
  '',
  '1',
  '1, 2',
  '1, 2, 3, 4',
  '[[1, 2, 3]]',
  '[[1], [2], [3]]',
  '{}',
  '{"x": [1, 2, 3]}',
  '{"features": [1, 2]}',
  // Not finite, or beyond float32.
  '1e400, 0, 0',
  '-1e400, 0, 0',
  '0, 1e999, 0',
  '1e39, 0, 0',
  '3.4028235677973366e38, 0, 0',
  '-3.5e38, 1, 1',
  '0, 0, 1e300',
  // Not JSON.
  'NaN, 0, 0',
  'Infinity, 0, 0',
  '0.2 1.5 -0.3',
  '1, 2,',
  '[1, 2, 3',
  '0x10, 0, 0',
  '.5, 0, 0',
  '+1, 0, 0',
  '1, 2, 3]',
];
const FIXED = [...ORDINARY, ...ZEROS, ...SATURATING, ...TINY, ...REFUSED];
const rng = new SeededRandom(104);
const RANDOM = Array.from({ length: 104 - FIXED.length }, () =>
  Array.from({ length: 3 }, () => Number(((rng.next() * 2 - 1) * 10 ** (rng.next() * 3 - 1)).toPrecision(4))).join(
    ', ',
  ),
);
const VECTORS = [...FIXED, ...RANDOM];

/** The body the page says it sends for what was typed. */
function bodyOf(typed: string): string {
  const text = typed.trim();
  return `{"inputs": ${/^[[{"]/.test(text) ? text : `[${text}]`}}`;
}

interface Shown {
  body: string;
  status: number;
  reply: { prediction?: { label: string; score: number }; error?: { code: string; message: string } };
  label: string;
  score: string;
}

describe.skipIf(chromiumMissing !== undefined)("the model panel of simulate --html against serve's ONNX model", () => {
  const dir = mkdtempSync(join(tmpdir(), 'batchline-model-panel-'));
  const report = join(dir, 'page.html');
  let chromium: OpenBrowser;
  let server: ServeProcess;

  beforeAll(async () => {
    // All settled before any failure is thrown, so afterAll stops whatever did start.
    const started = await Promise.allSettled([
      launchChromium().then((c) => (chromium = c)),
      spawnServe(['serve']).then((s) => (server = s)),
      runBatchline(['simulate', '--requests', '200', '--rate', '300', '--html', report]).then((run) => succeeded(run)),
    ]);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`answers ${VECTORS.length} feature vectors as POST /v1/infer does, refusals included`, async () => {
    expect(VECTORS).toHaveLength(104);
    const { page, problems } = await openReport(chromium.browser, report);
    const shown = await page.evaluate((texts: string[]) => {
      const panel = document.getElementById('model-panel');
      const input = panel?.querySelector('input');
      if (panel === null || input === null || input === undefined) throw new Error('the page has no model panel');
      const text = (selector: string) => panel.querySelector(selector)?.textContent ?? '';
      return texts.map((typed) => {
        input.value = typed;
        input.dispatchEvent(new Event('input'));
        return {
          body: text('.request'),
          status: Number(text('.status')),
          reply: JSON.parse(text('.reply')),
          label: text('.label'),
          score: text('.score'),
        };
      });
    }, VECTORS);
    expect(problems).toEqual([]);
    await page.close();
    expect(shown.map((s) => s.body)).toEqual(VECTORS.map(bodyOf));

    // All at once, so the server answers them in batches.
    const served = await Promise.all(
      shown.map(async ({ body }) => {
        const response = await fetch(`${server.url}/v1/infer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const reply = (await response.json()) as Shown['reply'] & { request_id?: string };
        delete reply.request_id;
        return { status: response.status, reply };
      }),
    );

    const differences: string[] = [];
    shown.forEach((page: Shown, i) => {
      const server = served[i]!;
      const same =
        page.status === server.status &&
        (server.reply.error?.code === 'bad_json'
          ? // serve's own JSON reader words its message; the code must agree.
            page.reply.error?.code === 'bad_json'
          : JSON.stringify(page.reply) === JSON.stringify(server.reply));
      if (!same)
        differences.push(
          `${VECTORS[i]}: page ${page.status} ${JSON.stringify(page.reply)}, serve ${server.status} ${JSON.stringify(server.reply)}`,
        );
      if (page.reply.prediction !== undefined) {
        expect(page.label).toBe(page.reply.prediction.label);
        expect(page.score).toBe(String(page.reply.prediction.score));
      } else expect(page.label).toBe('refused');
    });
    expect(differences).toEqual([]);

    // What the vectors covered.
    const scores = served.flatMap((s) => (s.reply.prediction === undefined ? [] : [s.reply.prediction.score]));
    const codes = served.flatMap((s) => (s.reply.error === undefined ? [] : [s.reply.error.code]));
    expect(scores).toHaveLength(104 - REFUSED.length);
    expect(codes).toHaveLength(REFUSED.length);
    expect(new Set(codes)).toEqual(new Set(['bad_input', 'bad_json']));
    for (const score of [0, 1, 0.5, 0.499999, 0.500001, 0.682799]) expect(scores).toContain(score);
    expect(new Set(served.map((s) => s.reply.prediction?.label))).toEqual(new Set(['positive', 'negative', undefined]));
  });
});
