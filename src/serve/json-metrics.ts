import type { ModelVersionStats, StatsAnswer } from '../stats-contract/server-stats.js';

/**
 * Whether an Accept header prefers JSON to Prometheus's text: `application/json` (any case, RFC
 * 9110) at a quality above 0 and no lower than any range that takes the text (`text/plain`,
 * OpenMetrics, `text/*`, `*\/*`). A pattern match answered JSON to `application/json;q=0,
 * text/plain` and text to `APPLICATION/JSON`. A quality that is not one (`q=abc`) counts as 1.
 */
export function acceptsJsonMetrics(accept: string | undefined): boolean {
  let json = 0;
  let text = 0;
  for (const range of (accept ?? '').split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParam = params.find((param) => param.startsWith('q='))?.slice(2);
    const q = qParam !== undefined && QVALUE.test(qParam) ? Number(qParam) : 1;
    if (type === 'application/json') json = Math.max(json, q);
    else if (TAKES_TEXT.has(type)) text = Math.max(text, q);
  }
  return json > 0 && json >= text;
}

/** RFC 9110's qvalue: 0 to 1, three decimals at most. */
const QVALUE = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/;

/** Media ranges that Prometheus's text answers. */
const TAKES_TEXT = new Set(['text/plain', 'application/openmetrics-text', 'text/*', '*/*']);

/**
 * `GET /metrics` with `Accept: application/json`: the middleware's JSON metrics (request counts,
 * error rate, latency percentiles, batch-size statistics, per model), computed from what
 * `/v1/stats` holds. Prometheus keeps its text; this is for people and scripts that read JSON.
 * Latency percentiles cover the recent window (`window_s`); counts run since each version
 * was loaded. The top-level counts are the server's answers, `/v1/stats`'s `responsesByStatus`:
 * those of every version, of versions deregistered since (whose entry leaves `models`, as their
 * Prometheus series leave the scrape: a total a client differences over time must not go down),
 * and those that reached no version (a 404 for an unknown model), so the two agree.
 */
export function jsonMetrics(stats: StatsAnswer | undefined, uptimeS: number): Record<string, unknown> {
  const models = (stats?.models ?? []).map(versionMetrics);
  const { requests, errors, rejected } = tally(stats?.responsesByStatus ?? {});
  return {
    uptime_s: round(uptimeS),
    state: stats?.state ?? 'starting',
    requests,
    errors,
    rejected,
    error_rate: rate(errors, requests),
    models,
  };
}

interface VersionMetrics extends Record<string, unknown> {
  requests: number;
  errors: number;
  rejected: number;
}

function versionMetrics(version: ModelVersionStats): VersionMetrics {
  const byStatus = version.responsesByStatus;
  const { requests, errors, rejected } = tally(byStatus);
  const snapshot = version.snapshot;
  const latency = snapshot.latencyMs;
  return {
    name: version.name,
    version: version.version,
    state: version.state,
    requests,
    ok: count(byStatus, (code) => code >= 200 && code < 300),
    errors,
    rejected,
    error_rate: rate(errors, requests),
    responses_by_status: { ...byStatus },
    latency_ms: {
      count: latency.count,
      p50: latency.p50,
      p95: latency.p95,
      p99: latency.p99,
      mean: round(latency.mean),
      max: latency.max,
      window_s: snapshot.windowMs / 1000,
    },
    batch_size: batchSizes(snapshot.batchSizeCounts),
    queue_depth: snapshot.queueDepth,
    running: snapshot.runningRequests,
  };
}

/** Answers, those with a 5xx status (errors) and the 429s (rejected), from the count of each status. */
function tally(byStatus: Readonly<Record<string, number>>): { requests: number; errors: number; rejected: number } {
  let requests = 0;
  let errors = 0;
  let rejected = 0;
  for (const [status, count] of Object.entries(byStatus)) {
    const code = Number(status);
    requests += count;
    if (code >= 500) errors += count;
    else if (code === 429) rejected += count;
  }
  return { requests, errors, rejected };
}

/** Batches, their mean size and its percentiles, from the count of batches of each size since the start. */
function batchSizes(counts: readonly number[]): Record<string, number> {
  let batches = 0;
  let items = 0;
  for (let size = 0; size < counts.length; size++) {
    batches += counts[size] ?? 0;
    items += size * (counts[size] ?? 0);
  }
  const at = (fraction: number): number => {
    if (batches === 0) return 0;
    const rank = Math.ceil(fraction * batches);
    let seen = 0;
    for (let size = 0; size < counts.length; size++) {
      seen += counts[size] ?? 0;
      if (seen >= rank) return size;
    }
    return counts.length - 1;
  };
  return {
    batches,
    mean: batches === 0 ? 0 : round(items / batches),
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    max: batches === 0 ? 0 : at(1),
  };
}

function count(byStatus: Record<string, number>, test: (code: number) => boolean): number {
  let total = 0;
  for (const [status, n] of Object.entries(byStatus)) if (test(Number(status))) total += n;
  return total;
}

function rate(part: number, whole: number): number {
  return whole === 0 ? 0 : round(part / whole);
}

function round(value: number): number {
  return Math.round(value * 1e4) / 1e4;
}
