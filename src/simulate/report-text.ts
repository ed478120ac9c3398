import type { DurationSummaryMs, SimulationReport } from './report.js';

/**
 * The report for people: a few aligned sections, plain text, no colour, stable bytes.
 * `targetGiven`: --target-latency-ms was given, so its "on time" line is shown under the fixed
 * policy too, which batches without it (--json's on_time_rps counts within it under every policy).
 */
export function formatReport(report: SimulationReport, { targetGiven = false } = {}): string {
  const { config, requests: r } = report;
  const lines: string[] = [];
  lines.push(`batchline simulate · seed ${report.seed} (the same seed and options give the same report)`);
  lines.push('');
  lines.push(
    `config      max-batch-size ${config.max_batch_size} · batch-window-ms ${config.batch_window_ms} · max-queue-size ${config.max_queue_size} · request-timeout-ms ${config.request_timeout_ms} · instances ${config.instances}${config.inline_mailbox > 0 ? ` · an inline mailbox of ${config.inline_mailbox} (--inline-mailbox)` : config.mailbox ? ' · a mailbox each (--pipeline)' : ''}`,
  );
  const adaptiveOrSla = config.batch_policy !== 'fixed' || config.admission !== 'queue';
  if (adaptiveOrSla) {
    const target = config.batch_policy === 'fixed' ? '' : `, target p95 ${config.target_latency_ms} ms`;
    lines.push(
      `policy      ${config.batch_policy}${target} · admission ${config.admission} · isolation ${config.isolation}`,
    );
  }
  lines.push(`arrivals    ${config.arrivals}`);
  lines.push(`service     ${config.service_time}${config.latency_cv > 0 ? ` · jitter cv ${config.latency_cv}` : ''}`);
  lines.push(...report.costs.given.map((cost, i) => `${i === 0 ? 'costs given' : ''.padEnd(11)} ${cost}`));
  lines.push(...report.costs.assumed_zero.map((cost, i) => `${i === 0 ? 'taken as 0 ' : ''.padEnd(11)} ${cost}`));
  if (Number.isFinite(report.capacity_rps) && report.capacity_rps > 0) {
    lines.push(
      `capacity    ${fixed(report.capacity_rps, 1)} req/s, ${report.capacity_basis} · offered load ${fixed((report.offered_rps / report.capacity_rps) * 100, 1)}% of it`,
    );
  }
  lines.push(...report.warnings.map((warning) => `warning     ${warning}`));
  lines.push('');
  const rejectedDetail = Object.entries(r.rejected_by_reason)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
  const expiredDetail =
    r.expired > 0 ? ` (in queue ${r.expired_in_queue}, while running ${r.expired_while_running})` : '';
  lines.push(
    `requests    arrived ${r.arrived} · admitted ${r.admitted} · rejected ${r.rejected}${rejectedDetail !== '' ? ` (${rejectedDetail})` : ''}`,
  );
  lines.push(
    `            completed ${r.completed} · expired ${r.expired}${expiredDetail}${r.failed > 0 ? ` · failed ${r.failed}` : ''}`,
  );
  lines.push(
    `rates       offered ${fixed(report.offered_rps, 1)} req/s · throughput ${fixed(report.throughput_rps, 1)} req/s · goodput ${fixed(report.goodput_rps, 1)} req/s · over ${formatDuration(report.simulated_ms)} simulated`,
  );
  if (adaptiveOrSla || targetGiven)
    lines.push(`            on time (within ${config.target_latency_ms} ms) ${fixed(report.on_time_rps, 1)} req/s`);
  const f = report.faults;
  if (f.failed_batches > 0 || f.unavailable > 0 || r.rejected_by_reason.circuit_open > 0) {
    lines.push(
      `faults      ${f.failed_batches} failed batches (${f.dead_batches} with no item answered) · ${f.model_runs} model runs (${f.isolation_runs} to isolate bad items) · breaker: ${r.rejected_by_reason.circuit_open} refused, ${f.unavailable} answered 503 while waiting`,
    );
  }
  lines.push('');
  lines.push(
    `${''.padEnd(12)}${['p50', 'p90', 'p95', 'p99', 'p99.9', 'max', 'mean'].map((h) => h.padStart(10)).join('')}`,
  );
  // Over no request there is no figure: 0.000 read as an instant answer.
  lines.push(durationRow('latency ms', report.latency_ms, r.completed > 0));
  lines.push(durationRow('queue ms', report.queue_wait_ms, report.batch_size.count > 0));
  lines.push(...priorityRows(report.priorities));
  lines.push('');
  lines.push(`batches     ${report.batch_size.count} · mean size ${fixed(report.batch_size.mean, 2)}`);
  lines.push(...batchHistogram(report.batch_size.histogram, report.batch_size.count));
  lines.push('');
  lines.push(`utilization ${report.utilization.map((u, i) => `instance ${i} ${fixed(u * 100, 1)}%`).join(' · ')}`);
  const little = report.littles_law;
  // The batcher's time, admission to answer (expired requests too): over a serving path the
  // latency above also holds the main thread's read and the generator, so the two means differ.
  lines.push(
    `in system   mean ${fixed(little.mean_in_system, 2)} requests (queued ${fixed(little.mean_in_queue, 2)}) = ${fixed(little.admitted_rps, 1)} req/s × ${fixed(little.mean_time_in_system_ms, 3)} ms from admission to answer (Little's law)`,
  );
  return `${lines.join('\n')}\n`;
}

/** With priority levels: each level's latency row, then what each level got. */
function priorityRows(priorities: SimulationReport['priorities']): string[] {
  if (priorities === undefined) return [];
  const rows = priorities.by_level.map((l) => durationRow(`  level ${l.level}`, l.latency_ms, l.completed > 0));
  rows.push('');
  for (const l of priorities.by_level) {
    const fate = [
      `arrived ${l.arrived}`,
      `completed ${l.completed}`,
      `expired ${l.expired}`,
      `rejected ${l.rejected}`,
      ...(l.failed > 0 ? [`failed ${l.failed}`] : []),
    ];
    const label = l.level === priorities.by_level[0]?.level ? 'priorities' : '';
    rows.push(
      `${label.padEnd(12)}level ${l.level}${l.level === priorities.default_level ? ' (default)' : ''}: ${fate.join(' · ')}`,
    );
  }
  return rows;
}

function durationRow(label: string, d: DurationSummaryMs, measured: boolean): string {
  const cells = [d.p50, d.p90, d.p95, d.p99, d.p999, d.max, d.mean].map((v) => (measured ? fixed(v, 3) : '-'));
  return `${label.padEnd(12)}${cells.map((cell) => cell.padStart(10)).join('')}`;
}

/** One line per batch size that occurred, with a bar; sizes are grouped when there are many. */
function batchHistogram(histogram: Record<string, number>, total: number): string[] {
  const entries = Object.entries(histogram).map(([size, count]) => [Number(size), count] as const);
  if (entries.length === 0 || total === 0) return [];
  const shown = entries.length <= 16 ? entries : groupSizes(entries);
  const widest = Math.max(...shown.map(([, count]) => count));
  return shown.map(([size, count]) => {
    const label = typeof size === 'number' ? String(size) : size;
    const bar = '█'.repeat(Math.max(1, Math.round((count / widest) * 30)));
    return `  size ${label.padStart(9)} ${bar.padEnd(30)} ${fixed((count / total) * 100, 1).padStart(5)}%  ${count}`;
  });
}

function groupSizes(entries: (readonly [number, number])[]): (readonly [string, number])[] {
  const groups = new Map<string, number>();
  for (const [size, count] of entries) {
    const low = 2 ** Math.floor(Math.log2(size));
    const key = low === size && size < 2 ? '1' : `${low}-${2 * low - 1}`;
    groups.set(key, (groups.get(key) ?? 0) + count);
  }
  return [...groups.entries()];
}

/** A number with `digits` decimals; stable across platforms. */
export function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

function formatDuration(ms: number): string {
  if (ms >= 120_000) return `${fixed(ms / 60_000, 2)} min`;
  if (ms >= 1000) return `${fixed(ms / 1000, 3)} s`;
  return `${fixed(ms, 3)} ms`;
}
