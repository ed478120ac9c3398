import type { Comparison } from '../../bench/compare.js';
import type { BenchJson } from '../../bench/report-json.js';
import { profileOf } from '../../bench/schedule.js';
import type { Slo } from '../../bench/sweep.js';
import { benchPageData, benchSweepPageData, type SweepBy } from './bench-page.js';
import { benchSeconds } from './bench-series.js';
import { comparePageData } from './compare-page.js';
import { renderReportHtml } from './render-html.js';
import type { RecordedRun } from '../../bench/server-samples.js';
import { writeReportFile } from './write-report.js';

/** `bench --html FILE` for one run. */
export async function writeBenchHtml(path: string, recorded: RecordedRun, commandLine: string): Promise<void> {
  const { run, plan, samples } = recorded;
  const profile = plan.mode === 'open' ? profileOf(plan) : undefined;
  const data = benchPageData(
    {
      result: run.result,
      seconds: benchSeconds(run.intervals),
      samples,
      startEpochMs: run.startEpochMs,
      windows: run.windows,
      targetRpsAt: profile === undefined ? undefined : (ms) => profile.rateAt(ms),
    },
    commandLine,
    new Date().toISOString(),
  );
  await writeReportFile(path, await renderReportHtml(data));
}

/** `bench --sweep … --html FILE` (or `--sweep-connections`): every step on the throughput–latency curve. */
export async function writeBenchSweepHtml(
  path: string,
  runs: readonly RecordedRun[],
  slo: Slo,
  commandLine: string,
  by: SweepBy = 'rate',
): Promise<void> {
  const data = benchSweepPageData(
    runs.map((r) => r.run.result),
    slo,
    commandLine,
    new Date().toISOString(),
    by,
  );
  await writeReportFile(path, await renderReportHtml(data));
}

/** `bench compare A B --html FILE`. */
export async function writeCompareHtml(
  path: string,
  a: BenchJson,
  b: BenchJson,
  comparison: Comparison,
  names: [string, string],
  commandLine: string,
): Promise<void> {
  await writeReportFile(
    path,
    await renderReportHtml(comparePageData(a, b, comparison, names, commandLine, new Date().toISOString())),
  );
}
