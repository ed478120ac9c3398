import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { TraceRow } from './trace-recorder.js';

/** One JSON line for a trace row; fields in a fixed order, times rounded to the nanosecond. */
function traceLine(row: TraceRow): string {
  const line: Record<string, unknown> = {
    id: row.id,
    arrival_ms: ns(row.arrival_ms),
    outcome: row.outcome,
  };
  if (row.priority !== undefined) line.priority = row.priority;
  if (row.outcome === 'rejected') line.reason = row.detail;
  if (row.outcome === 'expired') line.expired_in = row.detail;
  line.batch = row.batch;
  line.start_ms = row.start_ms === null ? null : ns(row.start_ms);
  line.end_ms = ns(row.end_ms);
  return JSON.stringify(line);
}

/** Writes the trace in request order (ids are arrival indexes), streaming so big runs fit. */
export async function writeTrace(path: string, rows: readonly (TraceRow | undefined)[]): Promise<void> {
  const stream = createWriteStream(path);
  const failed = once(stream, 'error').then(([error]) => {
    throw error;
  });
  failed.catch(() => {});
  let chunk = '';
  for (const row of rows) {
    if (row === undefined) continue;
    chunk += `${traceLine(row)}\n`;
    if (chunk.length > 1 << 16) {
      if (!stream.write(chunk)) await Promise.race([once(stream, 'drain'), failed]);
      chunk = '';
    }
  }
  stream.end(chunk);
  await Promise.race([once(stream, 'finish'), failed]);
}

function ns(ms: number): number {
  const rounded = Math.round(ms * 1e6) / 1e6;
  return rounded === 0 ? 0 : rounded;
}
