/**
 * What one run of bench:fidelity's real-model part measured, kept so that simulate can be judged
 * against it again later: the profile simulate was given, and for each instance count the real
 * capacity and, per level, the rate bench offered, bench's own CPU and what serve answered.
 * simulate is deterministic, so replaying a record (`FIDELITY_REPLAY=…`) gives the figures the
 * run would have given with the simulate of today: a change to the model is judged against
 * several recorded real runs at once, on a host whose own runs differ by more than the 10 % judged.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { LatencyProfile } from '../../src/profile/latency-profile.js';

export const RECORD_FORMAT = 'batchline-fidelity-record/1';

export interface FidelityRecord {
  format: typeof RECORD_FORMAT;
  taken_at: string;
  node: string;
  cores: number;
  model: string;
  body_bytes: number;
  /** serve's flags for every instance count (`--instances` apart). */
  serve_flags: string;
  /**
   * serve ran with --pipeline (a mailbox for each instance); absent in records from before it
   * was recorded, whose serve had none (it became serve's default on 2026-12-02).
   */
  pipeline?: boolean;
  repeats: number;
  seed: number;
  level_duration_ms: number;
  warmup_ms: number;
  profile: LatencyProfile;
  cases: RecordedCase[];
}

export interface RecordedCase {
  instances: number;
  /** serve's goodput under bench -c 64, the median of the runs, and their range. */
  capacity: { goodput_rps: number; range_rps: [number, number]; generator_cpu_ms: number; lost: number };
  levels: RecordedLevel[];
}

export interface RecordedLevel {
  /** Share of the capacity simulate predicted when the record was taken; `rate_rps` is what bench offered. */
  load: number;
  rate_rps: number;
  /** bench's CPU per request, the mean of the runs (simulate's --generator-cpu-ms). */
  generator_cpu_ms: number;
  throughput_rps: number;
  /** Of the runs' latencies pooled. */
  p50_ms: number;
  p99_ms: number;
  /** The runs' own p99s, lowest and highest. */
  p99_range_ms: [number, number];
  /** Non-2xx answers and failures over the runs. */
  lost: number;
  /** False when bench found a run's backlog or latency growing through it. */
  sustained: boolean;
  /** The pooled latency histogram (HDR, base64), when the run kept it. */
  latency_hdr?: string;
}

export function saveRecord(path: string, record: FidelityRecord): void {
  writeFileSync(path, `${JSON.stringify(record, null, 1)}\n`);
}

export function loadRecord(path: string): FidelityRecord {
  const record = JSON.parse(readFileSync(path, 'utf8')) as Partial<FidelityRecord>;
  if (record.format !== RECORD_FORMAT)
    throw new Error(
      `${path}: not a bench:fidelity record (format ${String(record.format)}, expected ${RECORD_FORMAT})`,
    );
  if (record.profile?.serving_path === undefined || !Array.isArray(record.cases))
    throw new Error(`${path}: a record needs the profile with its serving path and the cases measured`);
  return record as FidelityRecord;
}
