/**
 * Number formatting shared by the dashboards and the plain-text reports, so a latency or a rate
 * reads the same everywhere. Every function returns plain ASCII-safe text with no colour.
 */

/** A duration in ms with 3 significant digits: `0.412 ms`, `12.3 ms`, `456 ms`, `1.25 s`, `2m05s`. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const abs = Math.abs(ms);
  if (abs < 999.5) return `${significant(ms)} ms`; // 999.7 rounds to 1 s, not 1000 ms
  if (abs < 60_000) return `${significant(ms / 1000)} s`;
  return formatDurationS(ms / 1000);
}

/** Seconds as a compact clock: `12s`, `3m05s`, `1h02m`. */
export function formatDurationS(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '-';
  const total = Math.floor(seconds);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${pad2(m)}m`;
  if (m > 0) return `${m}m${pad2(s)}s`;
  return `${s}s`;
}

/** A count with thousands separators below a million, compact above: `12,345`, `1.23M`. */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return '-';
  const abs = Math.abs(n);
  if (abs >= 1e9) return `${significant(n / 1e9)}G`;
  if (abs >= 1e6) return `${significant(n / 1e6)}M`;
  return Math.round(n).toLocaleString('en-US');
}

/** A rate per second: `0/s`, `0.5/s`, `12.3/s`, `1,234/s`, `12.3k/s`. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return '-';
  const abs = Math.abs(perSecond);
  if (abs === 0) return '0/s';
  if (abs < 100) return `${significant(perSecond)}/s`;
  if (abs < 10_000) return `${Math.round(perSecond).toLocaleString('en-US')}/s`;
  if (abs < 1e6) return `${significant(perSecond / 1000)}k/s`;
  return `${significant(perSecond / 1e6)}M/s`;
}

/** A share in [0, 1] as a percentage: `0%`, `0.4%`, `12%`, `100%`. */
export function formatPercent(fraction: number): string {
  if (!Number.isFinite(fraction)) return '-';
  const pct = fraction * 100;
  if (pct === 0) return '0%';
  if (pct < 0.1) return '<0.1%';
  if (pct < 10) return `${pct.toFixed(1)}%`;
  return `${Math.round(pct)}%`;
}

/** `p50`, `p90`, `p95`, `p99`, `p99.9`, `max`: a latency figure's name as the objectives' grammar writes it. */
export { latencyMetricName } from '../options/objective.js';

/** Three significant digits without trailing noise: 0.412, 12.3, 456, 1234. */
function significant(value: number): string {
  const abs = Math.abs(value);
  if (abs === 0) return '0';
  if (abs >= 100) return String(Math.round(value));
  if (abs >= 10) return stripZeros(value.toFixed(1));
  if (abs >= 1) return stripZeros(value.toFixed(2));
  return stripZeros(value.toPrecision(3));
}

function stripZeros(text: string): string {
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}
