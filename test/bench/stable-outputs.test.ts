import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { afterEach, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import type { BenchOutputs } from '../../src/commands/bench-outputs.js';
import { ExitWithCode } from '../../src/errors.js';
import type { ReportPageData } from '../../src/report/html/page-data.js';
import { tempDir } from '../temp-dir.js';
import { validated } from './plan-helper.js';
import { alternatingServer, fixedDelayServer } from './servers.js';
import { TextSink } from './text-sink.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const base: BenchOutputs = { json: undefined, hdrLog: undefined, sweep: undefined, slo: 'p99<5s', quiet: true };

async function run(
  url: string,
  raw: Record<string, string>,
  outputs: Partial<BenchOutputs>,
  stdout: TextSink = new TextSink(),
) {
  let exit: ExitWithCode | undefined;
  try {
    await benchMain(
      validated(url, { warmup: '0', ...raw }),
      { ...base, ...outputs },
      { stdout, stderr: new TextSink(), env: {} },
    );
  } catch (error) {
    if (!(error instanceof ExitWithCode)) throw error;
    exit = error;
  }
  return exit;
}

/** The log's answers: untagged (every answer's latency) and `service`. */
function logCounts(text: string): { latency: number; service: number } {
  const reader = new hdr.HistogramLogReader(text);
  let latency = 0;
  let service = 0;
  for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) {
    if (h.tag === 'service') service += h.totalCount;
    else latency += h.totalCount;
  }
  return { latency, service };
}

function pageData(html: string): ReportPageData {
  const json = /<script type="application\/json" id="batchline-data">(.*?)<\/script>/s.exec(html)?.[1];
  if (json === undefined) throw new Error('no page data');
  return JSON.parse(json) as ReportPageData;
}

describe('--stable with --hdr-log and --html: the kept windows joined', () => {
  it("writes the log and the page of exactly the report's windows, and lists the discarded one on the page", async () => {
    const server = await alternatingServer(1, 30);
    close = server.close;
    const dir = tempDir('bench-stable-outputs-');
    const [json, hdrLog, html] = ['run.json', 'run.hlog', 'run.html'].map((f) => join(dir, f)) as [
      string,
      string,
      string,
    ];
    // Never settles: window 1 is discarded, 2-4 kept.
    const stdout = new TextSink();
    const exit = await run(
      `${server.url}infer`,
      { connections: '1', stable: '20', window: '250ms', maxWindows: '4' },
      { json, hdrLog, html },
      stdout,
    );
    expect(exit?.exitCode).toBe(1);
    const report = JSON.parse(await readFile(json, 'utf8'));
    expect(report.stability.kept).toEqual([2, 3, 4]);
    const all = report.latency_all_ms.count;
    const windows = report.stability.windows;
    expect(all).toBeGreaterThan(0);
    expect(all).toBe(report.requests.completed);

    const log = logCounts(await readFile(hdrLog, 'utf8'));
    expect(log.latency).toBe(all);
    expect(log.service).toBe(report.service_ms.count);
    expect(await readFile(hdrLog, 'utf8')).toMatch(/^#batchline bench GET \S+ windows 2-4 joined \(--stable\)$/m);

    const page = pageData(await readFile(html, 'utf8'));
    const latencyTable = page.tables.find((t) => t.title === 'Latency, ms');
    expect(latencyTable?.rows.find((r) => r[0] === 'every answer')?.[1]).toBe(String(all));
    expect(latencyTable?.rows.find((r) => r[0] === '2xx answers')?.[1]).toBe(String(report.latency_ms.count));
    const throughput = page.charts.find((c) => c.id === 'throughput-over-time');
    const answered = throughput?.series.find((s) => s.label === 'answered')?.values ?? [];
    expect(answered.reduce((n: number, v) => n + (v ?? 0), 0)).toBe(all);
    expect(throughput?.markers?.map((m) => m.label)).toEqual(['window 2', 'window 3', 'window 4', 'windows end']);
    const stability = page.tables.find((t) => t.title.startsWith('Stability'));
    expect(stability?.title).toBe("Stability: 4 windows, NOT SETTLED within 20%: the figures are windows 2-4's");
    expect(stability?.rows.map((r) => r[3])).toEqual(['discarded', 'kept', 'kept', 'kept']);
    expect(stability?.rows).toHaveLength(windows.length);
    // Each window's line, `window 2/4: 33.0 answered/s, mean 30.15 ms`, and its row on the page write one figure alike.
    const lines = [...stdout.text.matchAll(/^window (\d+)\/4: (\S+) answered\/s, mean (\S+) ms$/gm)];
    expect(lines.map((m) => [m[1], m[2], m[3]])).toEqual(stability?.rows.map((r) => r.slice(0, 3)));
  });

  it('writes a log a step of a sweep, each its kept windows', async () => {
    const server = await fixedDelayServer(5);
    close = server.close;
    const dir = tempDir('bench-stable-sweep-');
    const json = join(dir, 'sweep.json');
    // Settled or not (a loaded host can keep 200 ms windows apart), each step's files are written.
    const exit = await run(
      `${server.url}infer`,
      { sweepConnections: '1,2', stable: '100', window: '200ms', maxWindows: '5' },
      { json, hdrLog: join(dir, 'run.hlog'), html: join(dir, 'page.html'), sweepConnections: '1,2' },
    );
    expect([undefined, 1]).toContain(exit?.exitCode);
    expect((await readdir(dir)).sort()).toEqual(['page.html', 'run-c1.hlog', 'run-c2.hlog', 'sweep.json']);
    const sweep = JSON.parse(await readFile(json, 'utf8'));
    for (const step of sweep.steps) {
      const log = logCounts(await readFile(join(dir, `run-c${step.connections}.hlog`), 'utf8'));
      expect(log.latency).toBe(step.latency_all_ms.count);
    }
  });
});
