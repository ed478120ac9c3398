import { readFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { SIMULATE_OPTIONS } from '../options/simulate.js';

/** Keys under which a JSON recording may carry arrival (intended send) times in ms. */
const ARRAY_KEYS = ['arrivals_ms', 'arrival_times_ms', 'intended_ms', 'intended_send_ms', 'send_times_ms'] as const;
/** Keys a per-request record may use for its arrival time in ms. */
const RECORD_KEYS = ['arrival_ms', 'intended_ms', 'intended_send_ms', 'sent_ms', 'atMs'] as const;

/**
 * Arrival times and, when the records carry a `priority` (as `simulate --trace` writes it for a
 * run with priority levels), each arrival's priority level in the same order (0: none given).
 */
export interface ArrivalRecords {
  times: Float64Array;
  priorities: Uint8Array | undefined;
}

/**
 * Reads explicit arrival times (ms from the start of the run) for `--arrivals`:
 * - plain text, one number a line (blank lines and `#` comments ignored);
 * - a JSON array of numbers, or of records with `arrival_ms`;
 * - a JSON object carrying such an array under `arrivals_ms` (or `intended_ms`, …) or
 *   `requests` (a bench `--json` recording that kept its schedule);
 * - JSON lines with `arrival_ms`, such as `simulate --trace` output, so a trace can be replayed.
 * Times are sorted; a recording that does not start at 0 is replayed as it is. With each
 * arrival's priority when the records carry one.
 */
export async function readArrivalRecords(path: string): Promise<ArrivalRecords> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw fileError(path, `cannot be read (${(error as Error).message})`);
  }
  return parseArrivalRecords(text, path);
}

export function parseArrivals(text: string, path: string): Float64Array {
  return parseArrivalRecords(text, path).times;
}

function parseArrivalRecords(text: string, path: string): ArrivalRecords {
  const trimmed = text.trim();
  const priorities: (number | undefined)[] = [];
  let times: number[];
  if (trimmed.startsWith('[') || (trimmed.startsWith('{') && !trimmed.includes('\n')))
    times = fromJson(parseJson(trimmed, path), path, priorities);
  else if (trimmed.startsWith('{')) times = fromJsonDocumentOrLines(trimmed, path, priorities);
  else times = fromLines(trimmed, path);
  if (times.length === 0) throw fileError(path, 'holds no arrival times');
  // After the finite check of each value: a time past --duration's own limit would arrive after
  // its deadline had already passed in floating point (1e20 + 1000 is 1e20) and silently expire.
  const late = times.findIndex((time) => time > MAX_ARRIVAL_MS);
  if (late >= 0)
    throw fileError(path, `has an arrival time of ${times[late]} ms, past ${MAX_ARRIVAL_MS} ms (about 31 years)`);
  if (!priorities.some((priority) => priority !== undefined)) {
    const sorted = Float64Array.from(times).sort();
    if (!(sorted[0]! >= 0)) throw fileError(path, `has a negative arrival time (${sorted[0]})`);
    return { times: sorted, priorities: undefined };
  }
  // Sorted by time together; a stable sort keeps same-instant arrivals in the file's order.
  const order = times.map((_, i) => i).sort((a, b) => (times[a] as number) - (times[b] as number));
  const sorted = Float64Array.from(order, (i) => times[i] as number);
  if (!(sorted[0]! >= 0)) throw fileError(path, `has a negative arrival time (${sorted[0]})`);
  return { times: sorted, priorities: Uint8Array.from(order, (i) => priorities[i] ?? 0) };
}

function fromLines(text: string, path: string): number[] {
  const times: number[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).replace(/#.*/, '').trim();
    if (line === '') continue;
    const value = Number(line);
    if (!Number.isFinite(value)) throw fileError(path, `line ${i + 1} is not a number of ms: '${line.slice(0, 40)}'`);
    times.push(value);
  }
  return times;
}

function fromJsonDocumentOrLines(text: string, path: string, priorities: (number | undefined)[]): number[] {
  try {
    return fromJson(JSON.parse(text), path, priorities);
  } catch (error) {
    if (error instanceof BatchlineError) throw error;
  }
  // JSON lines: one record per line.
  priorities.length = 0;
  return text
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const record = parseJson(line, `${path} line ${i + 1}`);
      priorities.push(recordPriority(record, `${path} line ${i + 1}`));
      return recordTime(record, `${path} line ${i + 1}`);
    });
}

function fromJson(data: unknown, path: string, priorities: (number | undefined)[]): number[] {
  if (Array.isArray(data))
    return data.map((item, i) => {
      priorities.push(recordPriority(item, `${path} item ${i}`));
      return typeof item === 'number' ? finiteTime(item, `${path} item ${i}`) : recordTime(item, `${path} item ${i}`);
    });
  if (typeof data === 'object' && data !== null) {
    const object = data as Record<string, unknown>;
    for (const key of ARRAY_KEYS) if (Array.isArray(object[key])) return fromJson(object[key], path, priorities);
    if (Array.isArray(object.requests)) return fromJson(object.requests, path, priorities);
    if (RECORD_KEYS.some((key) => typeof object[key] === 'number')) {
      priorities.push(recordPriority(object, path));
      return [recordTime(object, path)];
    }
    if (typeof object.schema === 'string' && object.schema.startsWith('batchline.bench/'))
      throw benchSummary(object, path);
  }
  throw fileError(
    path,
    `carries no arrival times (looked for an array, or ${ARRAY_KEYS.join(', ')} or requests[].arrival_ms)`,
  );
}

/**
 * A bench --json report holds the schedule's parameters, not its times: name the flags that rebuild
 * its load. A closed loop has no schedule (its sends follow the server), so its measured throughput
 * stands in as an open-loop rate; a Poisson schedule also needs the seed it was drawn from.
 */
export function benchReplayFlags(report: Record<string, unknown>): string {
  const flags: string[] = [];
  const rate = report.target_rate_rps;
  if (typeof report.stages === 'string') flags.push(`--stages ${report.stages}`);
  else if (typeof rate === 'number') flags.push(`--rate ${rate}`);
  else if (typeof report.throughput_rps === 'number') flags.push(`--rate ${report.throughput_rps}`);
  const poisson = report.arrival === 'poisson';
  if (typeof rate === 'number' || typeof report.stages === 'string')
    flags.push(`--arrival ${poisson ? 'poisson' : 'constant'}`);
  else flags.push('--arrival poisson');
  if (typeof report.stages !== 'string' && typeof report.duration_s === 'number')
    flags.push(`--duration ${report.duration_s}s`);
  if (poisson && typeof report.seed === 'number') flags.push(`--seed ${report.seed}`);
  return flags.join(' ');
}

function benchSummary(report: Record<string, unknown>, path: string): BatchlineError {
  const closed = report.mode === 'closed' || (report.target_rate_rps == null && report.stages == null);
  const why = closed ? ' (a closed loop has no schedule: its throughput as a Poisson rate)' : '';
  return fileError(
    path,
    `is a bench --json summary without per-request times; simulate its load with ${benchReplayFlags(report)}${why}`,
  );
}

function recordTime(item: unknown, where: string): number {
  if (typeof item === 'object' && item !== null) {
    for (const key of RECORD_KEYS) {
      const value = (item as Record<string, unknown>)[key];
      if (typeof value === 'number') return finiteTime(value, `${where} ${key}`);
    }
  }
  throw fileError(where, `is not a number or a record with ${RECORD_KEYS.join(' or ')}`);
}

/** A record's `priority` (a level from 1, or 0 for the default), if it has one. */
function recordPriority(item: unknown, where: string): number | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const priority = (item as Record<string, unknown>).priority;
  if (priority === undefined || priority === null) return undefined;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 0 || priority > 255)
    throw fileError(where, `has priority ${JSON.stringify(priority)}; expected a level from 1 (0 = the default)`);
  return priority;
}

/** The latest arrival time replayed (ms): --duration's own limit. */
const MAX_ARRIVAL_MS = SIMULATE_OPTIONS.duration.maxMs;

/** A JSON number that overflowed (1e400 is Infinity to JSON.parse) is refused, not dropped. */
function finiteTime(value: number, where: string): number {
  if (!Number.isFinite(value)) throw fileError(where, `is ${value}, not a finite number of ms`);
  return value;
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw fileError(where, 'is not valid JSON');
  }
}

function fileError(where: string, why: string): BatchlineError {
  return new BatchlineError('INVALID_OPTION', `--arrivals: '${where}' ${why}`);
}
