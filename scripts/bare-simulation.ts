/**
 * The reference for `npm run bench:simulate`: the same batching as `batchline simulate` at its
 * defaults, written the way one writes a simulation when nothing else matters than speed — one
 * file, no core, no observers, no report. Poisson arrivals at 100 req/s (sfc32, the same draws as
 * simulate's), a FIFO queue bounded at 128, batches of up to 8 that leave full or when their
 * oldest request has waited 10 ms, one instance taking 20 ms a batch, deadlines of 2 s; events on
 * a binary min-heap ordered by (time, completion < expiry < window < arrival, sequence). It
 * counts outcomes and batch sizes, the instance's busy time, and keeps latencies and queue waits
 * in log-linear histograms (3 significant digits, as HDR's): the figures simulate reports.
 *
 * Usage: node dist/scripts/bare-simulation.js [REQUESTS] [SEED]; prints one line of figures.
 */
const requests = Number(process.argv[2] ?? 5_000_000);
const seed = Number(process.argv[3] ?? 1);
const RATE_PER_MS = 100 / 1000;
const MAX_BATCH = 8;
const WINDOW_MS = 10;
const QUEUE_BOUND = 128;
const SERVICE_MS = 20;
const TIMEOUT_MS = 2000;

// sfc32 seeded through splitmix32, as src/core/rng.ts.
let state = seed >>> 0;
function splitmix32(): number {
  state = (state + 0x9e3779b9) | 0;
  let z = state;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}
let a = splitmix32();
let b = splitmix32();
let c = splitmix32();
let d = splitmix32();
function uint32(): number {
  const t = (((a + b) | 0) + d) | 0;
  d = (d + 1) | 0;
  a = b ^ (b >>> 9);
  b = (c + (c << 3)) | 0;
  c = (c << 21) | (c >>> 11);
  c = (c + t) | 0;
  return t >>> 0;
}
for (let i = 0; i < 12; i++) uint32();

// Event kinds, in their same-instant order.
const COMPLETION = 0;
const EXPIRY = 1;
const WINDOW = 2;
const ARRIVAL = 3;

// The heap: parallel arrays of time, kind and sequence.
let capacity = 1024;
let times = new Float64Array(capacity);
let kinds = new Uint8Array(capacity);
let seqs = new Float64Array(capacity);
let size = 0;
let sequence = 0;

function before(i: number, atMs: number, kind: number, seq: number): boolean {
  const t = times[i] as number;
  if (t !== atMs) return t < atMs;
  const k = kinds[i] as number;
  if (k !== kind) return k < kind;
  return (seqs[i] as number) < seq;
}

function push(atMs: number, kind: number): void {
  if (size === capacity) {
    capacity *= 2;
    const t = new Float64Array(capacity);
    t.set(times);
    times = t;
    const k = new Uint8Array(capacity);
    k.set(kinds);
    kinds = k;
    const s = new Float64Array(capacity);
    s.set(seqs);
    seqs = s;
  }
  const seq = sequence++;
  let i = size++;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (before(parent, atMs, kind, seq)) break;
    times[i] = times[parent] as number;
    kinds[i] = kinds[parent] as number;
    seqs[i] = seqs[parent] as number;
    i = parent;
  }
  times[i] = atMs;
  kinds[i] = kind;
  seqs[i] = seq;
}

let topAtMs = 0;
let topKind = 0;
function pop(): void {
  topAtMs = times[0] as number;
  topKind = kinds[0] as number;
  size--;
  if (size === 0) return;
  const atMs = times[size] as number;
  const kind = kinds[size] as number;
  const seq = seqs[size] as number;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= size) break;
    const right = left + 1;
    const child =
      right < size && before(right, times[left] as number, kinds[left] as number, seqs[left] as number) ? right : left;
    if (!before(child, atMs, kind, seq)) break;
    times[i] = times[child] as number;
    kinds[i] = kinds[child] as number;
    seqs[i] = seqs[child] as number;
    i = child;
  }
  times[i] = atMs;
  kinds[i] = kind;
  seqs[i] = seq;
}

// The queue: arrival times on a ring (a deadline is arrival + TIMEOUT_MS, so it is FIFO too).
const ring = new Float64Array(QUEUE_BOUND * 2);
let head = 0;
let queued = 0;
const at = (i: number): number => ring[(head + i) % ring.length] as number;

// Latencies and queue waits in log-linear histograms of µs: 2048 sub-buckets per power of two (3 digits).
const SUB = 2048;
const latencies = new Float64Array(SUB * 40);
const waits = new Float64Array(SUB * 40);
function record(histogram: Float64Array, ms: number): void {
  const us = Math.max(1, Math.round(ms * 1000));
  const exponent = Math.max(0, 31 - Math.clz32(us) - 10);
  histogram[exponent * SUB + (us >>> exponent)]!++;
}
function percentileMs(histogram: Float64Array, count: number, q: number): number {
  let seen = 0;
  const rank = Math.ceil(q * count);
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i] as number;
    if (seen >= rank) {
      const exponent = Math.floor(i / SUB);
      return (((i % SUB) + 1) << exponent) / 1000;
    }
  }
  return Number.NaN;
}

// One batch slot: its requests' arrival times.
const running = new Float64Array(MAX_BATCH);
let runningCount = 0;
let busy = false;
let busyMs = 0;
const batchSizes = new Float64Array(MAX_BATCH + 1);
let windowArmedAtMs = Number.NaN;
let expiryArmed = false;
let arrived = 0;
let rejected = 0;
let completed = 0;
let expired = 0;
let batches = 0;
let nextArrivalMs = 0;

function dispatch(nowMs: number): void {
  // Expire what waited past its deadline, then start a batch if the slot is free and it is time.
  while (queued > 0 && at(0) + TIMEOUT_MS <= nowMs) {
    head = (head + 1) % ring.length;
    queued--;
    expired++;
  }
  if (busy || queued === 0) return;
  const closesAtMs = at(0) + WINDOW_MS;
  if (queued < MAX_BATCH && nowMs < closesAtMs) {
    if (windowArmedAtMs !== closesAtMs) {
      windowArmedAtMs = closesAtMs;
      push(closesAtMs, WINDOW);
    }
    return;
  }
  runningCount = Math.min(queued, MAX_BATCH);
  for (let i = 0; i < runningCount; i++) {
    running[i] = at(i);
    record(waits, nowMs - at(i));
  }
  batchSizes[runningCount]!++;
  busyMs += SERVICE_MS;
  head = (head + runningCount) % ring.length;
  queued -= runningCount;
  busy = true;
  batches++;
  push(nowMs + SERVICE_MS, COMPLETION);
}

const started = performance.now();
nextArrivalMs = -Math.log(1 - uint32() / 4294967296) / RATE_PER_MS;
push(nextArrivalMs, ARRIVAL);
while (size > 0) {
  pop();
  const nowMs = topAtMs;
  if (topKind === ARRIVAL) {
    arrived++;
    if (queued >= QUEUE_BOUND) rejected++;
    else {
      ring[(head + queued) % ring.length] = nowMs;
      queued++;
      if (!expiryArmed) {
        expiryArmed = true;
        push(nowMs + TIMEOUT_MS, EXPIRY);
      }
    }
    if (arrived < requests) {
      nextArrivalMs += -Math.log(1 - uint32() / 4294967296) / RATE_PER_MS;
      push(nextArrivalMs, ARRIVAL);
    }
    dispatch(nowMs);
  } else if (topKind === COMPLETION) {
    busy = false;
    for (let i = 0; i < runningCount; i++) {
      const latencyMs = nowMs - (running[i] as number);
      if (latencyMs > TIMEOUT_MS) expired++;
      else {
        completed++;
        record(latencies, latencyMs);
      }
    }
    runningCount = 0;
    dispatch(nowMs);
  } else if (topKind === EXPIRY) {
    dispatch(nowMs);
    expiryArmed = queued > 0;
    if (expiryArmed) push(at(0) + TIMEOUT_MS, EXPIRY);
  } else dispatch(nowMs);
}
const elapsedMs = performance.now() - started;
console.log(
  `bare simulation: ${arrived} arrived, ${completed} completed, ${rejected} rejected, ${expired} expired, ` +
    `${batches} batches (mean ${(completed / batches).toFixed(2)}, ${batchSizes[MAX_BATCH]} full), ` +
    `latency p50 ${percentileMs(latencies, completed, 0.5).toFixed(3)} ms, p99 ${percentileMs(latencies, completed, 0.99).toFixed(3)} ms, ` +
    `queue p50 ${percentileMs(waits, completed, 0.5).toFixed(3)} ms, utilization ${((100 * busyMs) / nextArrivalMs).toFixed(1)}%, loop ${elapsedMs.toFixed(0)} ms`,
);
