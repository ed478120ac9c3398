import { LATENESS_QUANTILES } from './timer-lateness.js';
import type { LatencyProfile } from './latency-profile.js';

/** The profile as a table for people, with the fit and what to do next. */
export function formatProfile(
  profile: LatencyProfile,
  outPath: string | undefined,
  defaultedInputs: readonly string[] = [],
  shapesFrom = '--item-shape',
): string {
  const lines: string[] = [];
  lines.push(
    `batchline profile · ${profile.model} · ${profile.warmup} warm-up and ${profile.repetitions} timed runs per batch size, interleaved`,
  );
  if (profile.item_shapes !== undefined) {
    const shapes = Object.entries(profile.item_shapes).map(([name, shape]) => `${name} [${shape.join(', ')}]`);
    lines.push(
      defaultedInputs.length === 0
        ? `item shapes: ${shapes.join(', ')} (${shapesFrom})`
        : `item shapes: ${shapes.join(', ')}: free dimensions of ${defaultedInputs.join(', ')} measured at size 1, far below what real inputs cost; give real sizes with --item-shape`,
    );
  }
  lines.push('');
  const headers = ['batch', 'p50 ms', 'mean ms', 'p90 ms', 'min ms', 'max ms', 'cv', 'p50/item', 'items/s'];
  const rows = profile.points.map((p) => [
    String(p.batch_size),
    p.p50_ms.toFixed(4),
    p.mean_ms.toFixed(4),
    p.p90_ms.toFixed(4),
    p.min_ms.toFixed(4),
    p.max_ms.toFixed(4),
    p.cv.toFixed(2),
    (p.p50_ms / p.batch_size).toFixed(4),
    p.p50_ms > 0 ? Math.round((p.batch_size * 1000) / p.p50_ms).toString() : '-',
  ]);
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] as string).length)));
  const render = (cells: string[]): string => cells.map((cell, c) => cell.padStart(widths[c] as number)).join('  ');
  lines.push(render(headers));
  for (const row of rows) lines.push(render(row));
  lines.push('');
  const { a_ms, b_ms, r2 } = profile.fit;
  // One batch size has no slope: r² 1.000 read as a perfect fit, and simulate then timed every larger batch as that one.
  if (new Set(profile.points.map((p) => p.batch_size)).size < 2)
    lines.push(
      `fit: one batch size measured, so no cost per item: simulate would time every larger batch as this one; give several, such as --batch-sizes 1,2,4,8,16,32`,
    );
  else lines.push(`fit (medians): ${affine({ a_ms, b_ms })}   r² ${r2.toFixed(3)}`);
  const path = profile.serving_path;
  if (path !== undefined) {
    lines.push('');
    lines.push(
      `main thread, per request: read ${path.wire.toUpperCase()} ${path.decode_ms.toFixed(4)} ms (${path.body_bytes} bytes) · check ${path.check_ms.toFixed(4)} ms · encode the answer ${path.encode_ms.toFixed(4)} ms`,
    );
    lines.push(
      path.execution !== 'inline'
        ? `${path.execution === 'process' ? 'instance process' : 'worker thread'}, per batch: run ${affine(path.run_fit)} · hand-over and back ${affine(path.handover_fit)} (in the table above)`
        : 'batches run inline, on the main thread (the table above)',
    );
    const cpu = path.serve_cpu;
    if (cpu !== undefined) {
      lines.push(
        `a real serve over HTTP (${cpu.requests} requests${cpu.rate_rps === undefined ? '' : ` at ${cpu.rate_rps.toFixed(1)} req/s`}, batches of ${cpu.mean_batch.toFixed(1)}), CPU per request: main thread ${cpu.main_ms.toFixed(4)} ms · model instance ${cpu.worker_ms.toFixed(4)} ms · serve's other threads (GC) ${cpu.helpers_ms.toFixed(4)} ms`,
      );
      if (cpu.gc_pauses !== undefined && cpu.gc_pauses.length > 0) {
        lines.push(
          `main thread's garbage-collection pauses per request (part of its CPU): ${cpu.gc_pauses.map((p) => `${p.kind} ${p.per_request.toFixed(4)} × ${p.mean_ms.toFixed(2)} ms`).join(' · ')}`,
        );
      }
      if (cpu.exec_ms !== undefined)
        lines.push(
          `under that load a batch took ${cpu.exec_ms.toFixed(4)} ms from its start to its end (serve's batchline_model_execution_seconds)`,
        );
      const open = cpu.open_loop;
      if (open !== undefined) {
        lines.push(
          `under Poisson arrivals at ${open.rate_rps.toFixed(1)} req/s (${open.requests} requests, batches of ${open.mean_batch.toFixed(1)}), CPU per request: main thread ${open.main_ms.toFixed(4)} ms · model instance ${open.worker_ms.toFixed(4)} ms · serve's other threads (GC) ${open.helpers_ms.toFixed(4)} ms; simulate takes the main thread's and the other threads' from here`,
        );
      }
      // The closed loop's figure is the one to give for a capacity (simulate.md): the open loop's,
      // which this line used to offer, is several times more and made the capacity 11-18 % low.
      lines.push(
        `bench's lean client spent ${cpu.client_ms.toFixed(4)} ms of CPU per request in the closed loop${open === undefined ? '' : `, ${open.client_ms.toFixed(4)} under Poisson arrivals`}: with a load generator on the same host, add --generator-cpu-ms ${cpu.client_ms.toFixed(3)} to simulate (the closed loop's, as bench -c spends it)`,
      );
    }
    lines.push(`cores ${path.cores}; simulate models the main thread and the instances sharing them`);
  }
  const late = profile.timer_lateness;
  if (late !== undefined) {
    const p99 = LATENESS_QUANTILES.indexOf(0.99);
    lines.push(
      `timers fire late on a loaded serve's real clock: the batcher's (window closes, deadlines) ${late.window.mean_ms.toFixed(3)} ms on average, p99 ${late.window.quantiles_ms[p99]!.toFixed(3)} · the end of --model-latency-ms ${late.completion.mean_ms.toFixed(3)} ms, p99 ${late.completion.quantiles_ms[p99]!.toFixed(3)}; simulate draws them`,
    );
  }
  const answers = profile.answer_turnaround;
  if (answers !== undefined) {
    const p99 = LATENESS_QUANTILES.indexOf(0.99);
    lines.push(
      `a batch's answers hold the next batch ${answers.mean_ms.toFixed(4)} ms an item on average (p99 ${answers.quantiles_ms[p99]!.toFixed(4)}), serve's main thread writing them; simulate adds them to each batch without a serving path`,
    );
  }
  lines.push("simulate uses each size's median; add --latency-cv for jitter");
  if (outPath !== undefined)
    lines.push(`wrote ${outPath}; next: batchline simulate --latency-profile ${outPath} --rate <req/s>`);
  else lines.push('add --out profile.json to save it for batchline simulate --latency-profile');
  return `${lines.join('\n')}\n`;
}

/** `a + b·n ms`, with the sign of b shown as such (a fitted hand-over can slope down by noise). */
function affine(fit: { a_ms: number; b_ms: number }): string {
  return `${fit.a_ms.toFixed(4)} ${fit.b_ms < 0 ? '−' : '+'} ${Math.abs(fit.b_ms).toFixed(4)}·n ms`;
}
