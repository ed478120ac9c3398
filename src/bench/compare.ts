import * as hdr from 'hdr-histogram-js';
import type { BenchJson } from './report-json.js';
import { counted, fmtMs, fmtRate } from './report-text.js';

/** Throughput changes smaller than this fraction are within run-to-run noise. */
const THROUGHPUT_NOISE_FRACTION = 0.05;

export interface Comparison {
  /** Rows of (figure, a, b, change). */
  rows: { figure: string; a: string; b: string; change: string }[];
  verdict: string;
  /** True when the verdict is "no clear difference". */
  noise: boolean;
  /** How the two runs differed in what they did, which makes their figures apples and oranges. */
  warnings: string[];
}

/**
 * Compares two --json reports. Latency differs when the runs' interquartile ranges
 * (p25..p75, read from the stored histograms) do not overlap; throughput when it moved more than
 * 5 %. Anything less is called noise: a second run of the same thing differs that much.
 */
/** `shownUrl`: how the warnings write a URL (a page hides credential query values). */
export function compareRuns(a: BenchJson, b: BenchJson, shownUrl?: (url: string) => string): Comparison {
  const rows: Comparison['rows'] = [];
  const rate = (figure: string, x: number, y: number): void => {
    rows.push({ figure, a: fmtRate(x), b: fmtRate(y), change: change(x, y) });
  };
  // A run with no 2xx answer has no latency: its zeros read as 0.000 ms, '-100%', an improvement.
  const emptyA = a.latency_ms.count === 0;
  const emptyB = b.latency_ms.count === 0;
  const ms = (figure: string, x: number, y: number): void => {
    rows.push({
      figure,
      a: emptyA ? '-' : fmtMs(x),
      b: emptyB ? '-' : fmtMs(y),
      change: emptyA || emptyB ? '-' : change(x, y),
    });
  };
  rate('throughput req/s', a.throughput_rps, b.throughput_rps);
  rate('goodput req/s', a.goodput_rps, b.goodput_rps);
  for (const key of ['p50', 'p90', 'p95', 'p99', 'p999', 'max', 'mean'] as const) {
    // p95 is absent from v1 reports.
    if (typeof a.latency_ms[key] === 'number' && typeof b.latency_ms[key] === 'number')
      ms(`latency ${key} ms`, a.latency_ms[key], b.latency_ms[key]);
  }
  const failedA = a.requests.errors + a.requests.dropped;
  const failedB = b.requests.errors + b.requests.dropped;
  rows.push({ figure: 'failed requests', a: String(failedA), b: String(failedB), change: change(failedA, failedB) });

  const iqrA = interquartile(a);
  const iqrB = interquartile(b);
  const findings: string[] = [];
  if (iqrA !== undefined && iqrB !== undefined) {
    const overlap = iqrA[0] <= iqrB[1] && iqrB[0] <= iqrA[1];
    if (!overlap) {
      findings.push(
        `latency is ${b.latency_ms.p50 < a.latency_ms.p50 ? 'lower' : 'higher'} in B (p50 ${change(a.latency_ms.p50, b.latency_ms.p50)}; p25..p75 A ${fmtMs(iqrA[0])}..${fmtMs(iqrA[1])} ms, B ${fmtMs(iqrB[0])}..${fmtMs(iqrB[1])} ms do not overlap)`,
      );
    }
  }
  const throughputMoved =
    Math.abs(b.throughput_rps - a.throughput_rps) > THROUGHPUT_NOISE_FRACTION * Math.max(a.throughput_rps, 1e-9);
  if (emptyA !== emptyB)
    findings.push(
      emptyB
        ? `B has no 2xx answer (A had ${a.latency_ms.count})`
        : `A had no 2xx answer (B has ${b.latency_ms.count})`,
    );
  if (throughputMoved)
    findings.push(
      `throughput is ${b.throughput_rps > a.throughput_rps ? 'higher' : 'lower'} in B (${change(a.throughput_rps, b.throughput_rps)})`,
    );
  // Throughput counts every answer: a server answering fast 500s has more of it, and less goodput.
  const goodputUp = b.goodput_rps > a.goodput_rps;
  const goodputMoved =
    Math.abs(b.goodput_rps - a.goodput_rps) > THROUGHPUT_NOISE_FRACTION * Math.max(a.goodput_rps, 1e-9);
  if (goodputMoved && (!throughputMoved || goodputUp !== b.throughput_rps > a.throughput_rps))
    findings.push(`goodput is ${goodputUp ? 'higher' : 'lower'} in B (${change(a.goodput_rps, b.goodput_rps)})`);
  if (failedA !== failedB && (failedA === 0 || failedB === 0))
    findings.push(`B has ${failedB > failedA ? 'failures A did not' : 'no failures, A had some'}`);
  const warnings = loadDifferences(a, b, shownUrl);
  if (findings.length === 0) {
    return {
      rows,
      noise: true,
      verdict:
        'no clear difference: the runs overlap (latency p25..p75 ranges intersect, throughput within 5%), so the changes above are noise',
      warnings,
    };
  }
  return { rows, noise: false, verdict: findings.join('; '), warnings };
}

/**
 * What the two runs did differently: another URL, method, body or load measures something else,
 * so a difference in their figures is not the change the user made. Said, not refused: comparing
 * two servers' URLs on purpose is fair. `shownUrl` writes the URLs, compared as given.
 */
export function loadDifferences(a: BenchJson, b: BenchJson, shownUrl = (url: string) => url): string[] {
  const warnings: string[] = [];
  const differ = (what: string, x: string, y: string, shown = (text: string) => text): void => {
    if (x !== y) warnings.push(`the runs ${what}: A ${shown(x)}, B ${shown(y)}`);
  };
  differ('loaded different URLs', a.url, b.url, shownUrl);
  differ('used different methods', a.method, b.method);
  // Reports written before bench recorded its bodies say nothing of them.
  if (a.body !== undefined && b.body !== undefined && a.body?.sha256 !== b.body?.sha256)
    differ('sent different bodies', bodyText(a.body), bodyText(b.body));
  differ('used different load', describeLoad(a), describeLoad(b));
  if (a.schema !== b.schema)
    warnings.push(
      `the reports' schemas differ (A ${a.schema}, B ${b.schema}): v1's latency mixed every status, v2's is of 2xx answers`,
    );
  return warnings;
}

export function formatComparison(c: Comparison, nameA: string, nameB: string): string {
  const header = ['', `A ${nameA}`, `B ${nameB}`, 'change'];
  const body = c.rows.map((r) => [r.figure, r.a, r.b, r.change]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const render = (row: string[]): string =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ');
  const warnings = c.warnings.length === 0 ? [] : ['', 'Warnings', ...c.warnings.map((w) => `  ! ${w}`)];
  return `${[render(header), ...body.map(render), '', `verdict: ${c.verdict}`, ...warnings].join('\n')}\n`;
}

function interquartile(run: BenchJson): [number, number] | undefined {
  if (typeof run.latency_hdr !== 'string' || run.latency_hdr === '') return undefined;
  const h = hdr.decodeFromCompressedBase64(run.latency_hdr, 64, false);
  try {
    if (h.totalCount === 0) return undefined;
    return [h.getValueAtPercentile(25) / 1000, h.getValueAtPercentile(75) / 1000];
  } finally {
    h.destroy();
  }
}

function change(a: number, b: number): string {
  if (a === b) return '0%';
  if (a === 0) return 'new';
  const pct = ((b - a) / a) * 100;
  return `${pct > 0 ? '+' : ''}${pct.toFixed(1)}%`;
}

function describeLoad(run: BenchJson): string {
  if (run.mode !== 'open') return `closed loop with ${counted(run.connections * run.pipelining, 'sender')}`;
  const rate = run.stages ?? `${run.target_rate_rps} req/s`;
  return `open loop at ${rate}${run.arrival === null ? '' : ` (${run.arrival})`}`;
}

function bodyText(body: BenchJson['body']): string {
  if (body === null || body === undefined) return 'no body';
  const shape =
    body.count === 1
      ? `1 body of ${counted(body.bytes, 'byte')}`
      : `${body.count} bodies, ${counted(body.bytes, 'byte')} in all`;
  return `${shape} (sha256 ${body.sha256.slice(0, 12)})`;
}
