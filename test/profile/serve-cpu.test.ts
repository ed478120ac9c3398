import { describe, expect, it } from 'vitest';
import type { BenchPlan } from '../../src/bench/plan.js';
import { measureServeCpu, type ServeCpu, type ServeCpuPhase } from '../../src/profile/serve-cpu.js';

const settings = {
  modelPath: 'model.onnx',
  intraOpThreads: 1,
  maxBatchSize: 16,
  body: new Uint8Array(8),
  durationMs: 3000,
  connections: 16,
};

/** What a serve answered, as measureServeCpu's one serve reports it (only the rate matters here). */
const answered = (rateRps: number): ServeCpu => ({
  requests: 100,
  mainMs: 1,
  workerMs: 1,
  helpersMs: 0,
  clientMs: 0,
  meanBatch: 4,
  execMs: 5,
  rateRps,
  gcPauses: [],
});

describe.skipIf(process.platform !== 'linux')('profile: a real serve under load (serve-cpu.ts)', () => {
  it('measures the open loop on a serve of its own that has seen only Poisson arrivals at that rate', async () => {
    const serves: { warmup: BenchPlan; measure: BenchPlan }[] = [];
    const cpu = await measureServeCpu(settings, async (_s, phaseAt) => {
      const phase: ServeCpuPhase = phaseAt(`http://127.0.0.1:${4000 + serves.length}`);
      serves.push(phase);
      return answered(serves.length === 1 ? 485 : 291);
    });
    // Two serves: V8 sizes the heap from how fast a process first allocated, so a serve that ran
    // the closed loop first kept the closed loop's collections under Poisson arrivals.
    expect(serves).toHaveLength(2);
    const [closed, open] = serves as [ServeCpuPhase, ServeCpuPhase];
    expect(closed.warmup.mode).toBe('closed');
    expect(closed.measure).toMatchObject({ mode: 'closed', connections: 16, durationMs: 3000 });
    expect(open.measure).toMatchObject({ mode: 'open', arrival: 'poisson', rateRps: 291, durationMs: 3000 });
    expect(open.measure.url).toBe('http://127.0.0.1:4001/v1/infer');
    // Its warm-up is the same arrivals, half as long, on another schedule.
    expect(open.warmup).toMatchObject({ mode: 'open', arrival: 'poisson', rateRps: 291, durationMs: 1500 });
    expect(open.warmup.seed).not.toBe(open.measure.seed);
    expect(cpu?.rateRps).toBe(485);
    expect(cpu?.openLoop?.rateRps).toBe(291);
  });
});
