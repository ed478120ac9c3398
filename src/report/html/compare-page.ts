import type { Comparison } from '../../bench/compare.js';
import type { BenchJson } from '../../bench/report-json.js';
import { distributionOf } from './bench-charts.js';
import { PALETTE } from './colors.js';
import type { ChartSpec, ReportPageData } from './page-data.js';
import { percentileChart } from './percentile-distribution.js';

/** `bench compare a.json b.json --html`: both distributions on one plot, the table, the verdict. */
export function comparePageData(
  a: BenchJson,
  b: BenchJson,
  comparison: Comparison,
  names: [string, string],
  generatedBy: string,
  generatedAt: string,
): ReportPageData {
  const runs = [
    { label: `A ${names[0]}`, color: PALETTE[0] as string, points: distributionOf(a.latency_hdr, a.latency_ms.max) },
    { label: `B ${names[1]}`, color: PALETTE[1] as string, points: distributionOf(b.latency_hdr, b.latency_ms.max) },
  ].filter((run) => run.points.length > 0);
  const charts: ChartSpec[] = [];
  if (runs.length > 0) {
    charts.push(
      percentileChart(
        'latency-distribution',
        runs,
        "Both runs' latency of 2xx answers by percentile, from the whole HDR histograms the --json reports carry (x: 1/(1−q), log scale). Curves that cross or lie close are the noise the verdict speaks of.",
      ),
    );
  }
  return {
    kind: 'bench-compare',
    title: `batchline bench compare · ${names[0]} → ${names[1]}`,
    subtitle: `verdict: ${comparison.verdict}`,
    facts: [
      { label: 'throughput A → B', value: `${a.throughput_rps.toFixed(1)} → ${b.throughput_rps.toFixed(1)} /s` },
      { label: 'p50 A → B', value: `${ms(a, 'p50')} → ${ms(b, 'p50')} ms` },
      { label: 'p99 A → B', value: `${ms(a, 'p99')} → ${ms(b, 'p99')} ms` },
      { label: 'difference', value: comparison.noise ? 'noise' : 'clear' },
    ],
    tables: [
      {
        title: 'Figures',
        head: ['', `A ${names[0]}`, `B ${names[1]}`, 'change'],
        rows: comparison.rows.map((r) => [r.figure, r.a, r.b, r.change]),
      },
    ],
    warnings: comparison.warnings,
    charts,
    missing:
      runs.length > 0
        ? []
        : [{ title: 'Latency by percentile', why: 'Neither report carries its latency histogram (latency_hdr).' }],
    generatedBy,
    generatedAt,
  };
}

/** A run with no 2xx answer has no latency: '–', not the 0 its report holds (as the comparison table says '-'). */
function ms(run: BenchJson, key: 'p50' | 'p99'): string {
  return run.latency_ms.count > 0 ? String(run.latency_ms[key]) : '–';
}
