import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { CpuPool, FifoThread } from '../../src/simulate/cpu-pool.js';
import { validateLatencyProfile } from '../../src/profile/latency-profile.js';
import { formatProfile } from '../../src/profile/profile-text.js';
import { formatReport } from '../../src/simulate/report-text.js';
import { ServingPath } from '../../src/simulate/serving-path-model.js';
import { bareServingPath, simulate, simulateWithInputs, workerModelProfile } from './helpers.js';
import { tempDir } from '../temp-dir.js';

const dir = tempDir('batchline-path-');

/** A profile of a worker model whose batch of n takes 1 + 1·n ms (at `sizes`), with the main thread's steps measured. */
function writeProfile(
  path: {
    decode_ms: number;
    check_ms: number;
    encode_ms: number;
    cores: number;
    execution?: 'inline' | 'worker';
  },
  sizes: readonly number[] = [1, 2, 4, 8],
): string {
  const file = join(dir, `profile-${Object.values(path).join('-')}-${sizes.join('-')}.json`);
  writeFileSync(file, JSON.stringify(workerModelProfile(path, sizes)));
  return file;
}

/** The hand-over's wait per item a report's costs name (0 when none). */
function handoverWaitMsOf(report: { costs: { given: string[] } }): number {
  const match = /per item, waiting in the hand-over under load, no CPU: ([\d.]+) ms/.exec(
    report.costs.given.join('\n'),
  );
  return match === null ? 0 : Number(match[1]);
}

describe('CpuPool: threads sharing cores', () => {
  it('runs a thread on a free core at full speed; one that finds none waits for a tick at which a running thread has had its slice', () => {
    const clock = new VirtualClock();
    const pool = new CpuPool(clock, 2, { tickMs: 4, sliceMs: 1.5 });
    const finished: [number, number][] = [];
    // Threads 0 and 1 take the two cores; 2 waits for the tick at 4 ms, where the one that has held
    // its core longest (the later of equals) goes to the back of the line. 0 ends at 6 and gives
    // its core to 1, which ends its last 2 ms at 8; 2 runs its 9 ms from 4 to 13.
    pool.run(0, 6, () => finished.push([0, clock.now()]));
    pool.run(1, 6, () => finished.push([1, clock.now()]));
    pool.run(2, 9, () => finished.push([2, clock.now()]));
    clock.run();
    expect(finished).toEqual([
      [0, 6],
      [1, 8],
      [2, 13],
    ]);
    // Processor sharing gave 9, 9 and 12: no thread ever waited for a tick.
  });

  it('preempts at once, when a thread wakes, one that has held its core past its slice', () => {
    const clock = new VirtualClock();
    const pool = new CpuPool(clock, 1, { tickMs: 4, sliceMs: 1.5 });
    const finished: [number, number][] = [];
    pool.run(0, 10, () => finished.push([0, clock.now()]));
    clock.schedule(1, () => pool.run(1, 0.5, () => finished.push([1, clock.now()])), 0);
    clock.schedule(6, () => pool.run(2, 1, () => finished.push([2, clock.now()])), 0);
    clock.run();
    // At 1 ms, thread 0 has held the core less than a slice: 1 waits for the tick at 4. At 6, 0
    // has held it since 4.5 (1.5 ms): 2 takes it at once. 0 ran 4 + 1.5 ms, and its last 4.5 from 7.
    expect(finished).toEqual([
      [1, 4.5],
      [2, 7],
      [0, 11.5],
    ]);
  });

  it('lets a thread that goes straight on to its next piece keep its core (a busy event loop does not yield)', () => {
    const clock = new VirtualClock();
    const pool = new CpuPool(clock, 1, { tickMs: 4, sliceMs: 1.5 });
    const main = new FifoThread(pool, 0);
    const done: [string, number][] = [];
    for (const name of ['a', 'b', 'c']) main.enqueue(1, () => done.push([name, clock.now()]));
    clock.schedule(0.5, () => pool.run(1, 1, () => done.push(['other', clock.now()])), 0);
    clock.run();
    // The tick at 4 finds the main thread idle since 3: the other thread had the core from 3.
    expect(done).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['other', 4],
    ]);
  });

  it('gives every thread a core of its own when there are enough', () => {
    const clock = new VirtualClock();
    const pool = new CpuPool(clock, Number.POSITIVE_INFINITY);
    const finished: number[] = [];
    for (let thread = 0; thread < 5; thread++) pool.run(thread, 3, () => finished.push(clock.now()));
    clock.run();
    expect(finished).toEqual([3, 3, 3, 3, 3]);
  });

  it("runs a thread's FIFO in order, each piece after the last", () => {
    const clock = new VirtualClock();
    const main = new FifoThread(new CpuPool(clock, 1), 0);
    const done: [string, number][] = [];
    main.enqueue(2, () => done.push(['a', clock.now()]));
    main.enqueue(3, () => {
      done.push(['b', clock.now()]);
      main.enqueue(1, () => done.push(['d', clock.now()]));
    });
    main.enqueue(0, () => done.push(['c', clock.now()]));
    clock.run();
    expect(done).toEqual([
      ['a', 2],
      ['b', 5],
      ['c', 5],
      ['d', 6],
    ]);
  });

  it("handles a worker's reply after the requests already waiting to be read, as Node's event loop does", () => {
    const clock = new VirtualClock();
    // A core per thread, a request read in 1 ms, a batch run in 2 ms, nothing else.
    const path = new ServingPath(clock, bareServingPath({ admitMs: 1, batchWorkMs: () => 2 }));
    const read: number[] = [];
    let answeredAtMs: number | undefined;
    path.start(
      { id: 1, instance: 0, requests: [], inputs: [1], startedAtMs: 0, trigger: 'full', finishedAtMs: undefined },
      () => (answeredAtMs = clock.now()),
    );
    // Requests arrive while the batch runs: read 0.5–1.5, 1.5–2.5 and 2.5–3.5 on the main thread.
    for (const atMs of [0.5, 1, 1.5])
      clock.schedule(atMs, () => path.arrive(() => read.push(clock.now())), EventOrder.arrival);
    clock.run();
    expect(read).toEqual([1.5, 2.5, 3.5]);
    // The run ends at 2 ms; its reply waits for the reads queued before it, not only the one running.
    expect(answeredAtMs).toBe(3.5);
  });

  it("starts a batch whose window closed once the main thread has done the reads already due (a timer of serve's event loop), a full one at once", () => {
    const answeredAt = (trigger: 'window' | 'full'): number => {
      const clock = new VirtualClock();
      const path = new ServingPath(clock, bareServingPath({ admitMs: 1, batchWorkMs: () => 2 }));
      let atMs = Number.NaN;
      // Two requests are being read (0–1 and 1–2 ms on the main thread) when the batch is dispatched at 0.5 ms.
      path.arrive(() => {});
      path.arrive(() => {});
      clock.schedule(
        0.5,
        () =>
          path.start(
            { id: 1, instance: 0, requests: [], inputs: [1], startedAtMs: 0.5, trigger, finishedAtMs: undefined },
            () => (atMs = clock.now()),
          ),
        EventOrder.window,
      );
      clock.run();
      return atMs;
    };
    // Full: dispatched while a request was read, it runs at once (0.5–2.5), its reply after the second read (done at 2).
    expect(answeredAt('full')).toBe(2.5);
    // Window: the timer runs after both reads (at 2), the run takes 2 ms.
    expect(answeredAt('window')).toBe(4);
  });
});

describe('simulate over a measured serving path', () => {
  it('with no main-thread cost and a core per thread, predicts what the batch service time alone predicts', async () => {
    const free = writeProfile({ decode_ms: 0, check_ms: 0, encode_ms: 0, cores: 64 });
    const common = { rate: 500, requests: 20_000, maxBatchSize: 8, instances: 2 };
    const path = await simulateWithInputs({ ...common, latencyProfile: free });
    const batchOnly = simulate({ ...common, latency: '1+1n' }).report;
    expect(path.latency_ms).toEqual(batchOnly.latency_ms);
    expect(path.throughput_rps).toBe(batchOnly.throughput_rps);
  });

  it("adds the main thread's reading before the batcher and its encoding after, to every latency", async () => {
    const costly = writeProfile({ decode_ms: 0.3, check_ms: 0.1, encode_ms: 0.05, cores: 64 });
    const free = writeProfile({ decode_ms: 0, check_ms: 0, encode_ms: 0, cores: 64 });
    // One request at a time: nothing queues, so each costs exactly 0.4 + batch + 0.05 ms more.
    const common = { rate: 10, requests: 200, maxBatchSize: 1, arrival: 'constant' };
    const with_ = await simulateWithInputs({ ...common, latencyProfile: costly });
    const without = await simulateWithInputs({ ...common, latencyProfile: free });
    expect(with_.latency_ms.mean - without.latency_ms.mean).toBeCloseTo(0.45, 6);
    expect(with_.latency_ms.mean).toBeCloseTo(0.4 + 2 + 0.05, 6);
  });

  it('lets instances contend for the cores they share: two instances on one core serve what one does', async () => {
    const oneCore = writeProfile({ decode_ms: 0, check_ms: 0, encode_ms: 0, cores: 1 });
    const twoCores = writeProfile({ decode_ms: 0, check_ms: 0, encode_ms: 0, cores: 2 });
    // Overloaded with full batches of 8 (9 ms): one core carries 8 / 9 ms = 889 req/s, two 1,778.
    const common = {
      rate: 3000,
      requests: 30_000,
      maxBatchSize: 8,
      instances: 2,
      maxQueueSize: 1_000_000,
      requestTimeoutMs: 1e9,
    };
    const shared = await simulateWithInputs({ ...common, latencyProfile: oneCore });
    const own = await simulateWithInputs({ ...common, latencyProfile: twoCores });
    expect(shared.throughput_rps / 889).toBeCloseTo(1, 1);
    expect(own.throughput_rps / 1778).toBeCloseTo(1, 1);
    expect(shared.capacity_rps / 888.9).toBeCloseTo(1, 2);
    // Without a real serve's figures it says what it leaves out: simulate.md's example read 255,057 req/s, serve answered 20,290.
    expect(shared.capacity_basis).toBe(
      'what a closed loop of 64 connections gets answered over the serving path, with HTTP and garbage collection taken as 0 (above): a real serve answers less; profile --model measures them',
    );
    expect(own.capacity_rps / 1777.8).toBeCloseTo(1, 2);
    // --cores overrides the profile's count.
    expect(
      (await simulateWithInputs({ ...common, latencyProfile: twoCores, cores: 1 })).capacity_rps / 888.9,
    ).toBeCloseTo(1, 2);
  });

  it('makes the main thread a server of its own: its cost per request bounds the capacity', async () => {
    const slowMain = writeProfile({ decode_ms: 1.5, check_ms: 0.5, encode_ms: 0, cores: 4 });
    const common = {
      requests: 20_000,
      maxBatchSize: 8,
      instances: 2,
      maxQueueSize: 1_000_000,
      requestTimeoutMs: 1e9,
      latencyProfile: slowMain,
    };
    // 2 ms a request on the main thread: 500 req/s, though the two instances could do 1,778.
    const below = await simulateWithInputs({ ...common, rate: 450 });
    expect(below.capacity_rps / 500).toBeCloseTo(1, 2);
    expect(below.throughput_rps / 450).toBeCloseTo(1, 1);
    const above = await simulateWithInputs({ ...common, rate: 700 });
    expect(above.throughput_rps).toBeLessThan(505);
    expect(above.latency_ms.p50).toBeGreaterThan(10 * below.latency_ms.p50);
  });

  it('counts what a real serve spent per request (HTTP, GC) and a load generator sharing the host', async () => {
    const file = join(dir, 'profile-served.json');
    const profile = JSON.parse(
      readFileSync(writeProfile({ decode_ms: 0.3, check_ms: 0.1, encode_ms: 0.01, cores: 2 }), 'utf8'),
    );
    profile.serving_path.serve_cpu = {
      requests: 1000,
      main_ms: 0.81,
      worker_ms: 1,
      helpers_ms: 0.2,
      client_ms: 0.25,
      mean_batch: 8,
    };
    writeFileSync(file, JSON.stringify(profile));
    const common = { rate: 100, requests: 300, maxBatchSize: 1, arrival: 'constant', latencyProfile: file };
    const alone = await simulateWithInputs(common);
    // One request at a time: 0.8 ms on the main thread before the batcher, 2 ms of run, 0.01 ms after.
    expect(alone.latency_ms.mean).toBeCloseTo(0.8 + 2 + 0.01, 6);
    expect(alone.costs.given.join('\n')).toMatch(/measured on a real serve over HTTP: 0\.81 ms in all/);
    expect(alone.costs.assumed_zero.join('\n')).not.toMatch(/garbage collection/);
    const unshared = await simulateWithInputs({ ...common, maxBatchSize: 8 });
    const shared = await simulateWithInputs({ ...common, maxBatchSize: 8, generatorCpuMs: 0.25 });
    expect(shared.costs.given.join('\n')).toMatch(/a load generator on the same host, per request: 0\.25 ms/);
    // 1 ms more a request on two cores: their 2.1 ms a request of serve's become 3.1, 640 req/s at most.
    const crowded = await simulateWithInputs({ ...common, maxBatchSize: 8, generatorCpuMs: 1 });
    expect(crowded.capacity_rps).toBeLessThan(unshared.capacity_rps);
    expect(crowded.capacity_rps).toBeLessThanOrEqual(2000 / (0.81 + 9 / 8 + 0.2 + 1) + 1);
    // The generator writes each request before serve reads it and reads each answer after: with
    // one request at a time, its 0.25 ms (half each way) is in every latency, as bench measures it.
    const measuredByGenerator = await simulateWithInputs({ ...common, generatorCpuMs: 0.25 });
    expect(measuredByGenerator.latency_ms.mean - alone.latency_ms.mean).toBeCloseTo(0.25, 6);

    // Under that load its batches of 8 took 20 ms, 11 more than the isolated 9: a wait in the hand-over, per item.
    profile.serving_path.serve_cpu.exec_ms = 20;
    writeFileSync(file, JSON.stringify(profile));
    const waited = await simulateWithInputs({ ...common, maxBatchSize: 8, pipeline: false });
    expect(waited.costs.given.join('\n')).toMatch(/per item, waiting in the hand-over under load, no CPU: 1\.375 ms/);
    expect(waited.capacity_rps).toBeLessThan(unshared.capacity_rps);
    expect(waited.capacity_rps).toBeLessThanOrEqual((8 * 1000) / 20 + 1);
    // With a mailbox (serve's default) the instance runs its next batch while the last one's answers wait.
    const mailbox = await simulateWithInputs({ ...common, maxBatchSize: 8 });
    expect(mailbox.capacity_rps).toBeGreaterThan(1.5 * waited.capacity_rps);
  });

  it('serves Poisson traffic at the costs a real serve showed under Poisson arrivals, and keeps the capacity of its closed loop', async () => {
    const file = join(dir, 'profile-open-loop.json');
    const profile = JSON.parse(
      readFileSync(writeProfile({ decode_ms: 0.3, check_ms: 0.1, encode_ms: 0.01, cores: 2 }), 'utf8'),
    );
    profile.serving_path.serve_cpu = {
      requests: 1000,
      main_ms: 0.81,
      worker_ms: 1,
      helpers_ms: 0.2,
      client_ms: 0.1,
      mean_batch: 8,
    };
    writeFileSync(file, JSON.stringify(profile));
    const common = { rate: 300, requests: 3000, maxBatchSize: 8, arrival: 'poisson', seed: 4 };
    const closedOnly = await simulateWithInputs({ ...common, latencyProfile: file });
    // Under Poisson arrivals the main thread spent 1.5 ms a request, not 0.81.
    profile.serving_path.serve_cpu.open_loop = {
      requests: 500,
      rate_rps: 300,
      main_ms: 1.51,
      worker_ms: 1.2,
      helpers_ms: 0.3,
      client_ms: 0.2,
      mean_batch: 5,
    };
    writeFileSync(file, JSON.stringify(profile));
    const withOpenLoop = await simulateWithInputs({ ...common, latencyProfile: file });
    expect(withOpenLoop.costs.given.join('\n')).toMatch(
      /1\.51 ms in all .*under Poisson arrivals at 300 req\/s \(0\.81 in a closed loop\)/,
    );
    expect(withOpenLoop.latency_ms.mean).toBeGreaterThan(closedOnly.latency_ms.mean + 0.6);
    expect(withOpenLoop.capacity_rps).toBe(closedOnly.capacity_rps);
    // A profile whose open-loop figures are not numbers is refused, naming the field.
    // profile's text offers the closed loop's client CPU for --generator-cpu-ms, as this page says to
    // give for a capacity: it offered the open loop's (0.200), several times more on a real host.
    expect(formatProfile(validateLatencyProfile(profile, 'p.json'), undefined)).toMatch(
      /lean client spent 0\.1000 ms of CPU per request in the closed loop, 0\.2000 under Poisson arrivals: .*add --generator-cpu-ms 0\.100 to simulate/,
    );
    profile.serving_path.serve_cpu.open_loop.main_ms = 'slow';
    expect(() => validateLatencyProfile(profile, 'p.json')).toThrow(/open_loop/);
    // No core, or half of one: the calibration run's threads never got one, and simulate never ended.
    for (const cores of [0, 0.5]) {
      const noCore = { ...profile, serving_path: { ...profile.serving_path, cores } };
      expect(() => validateLatencyProfile(noCore, 'p.json')).toThrow(
        new RegExp(`serving_path whose cores is ${cores}: it must be a whole number of cores, at least 1`),
      );
    }
  });

  it("takes from a real serve's batch time only the wait that sharing the cores does not already explain", async () => {
    // Batches of 8 took 20 ms at 300 req/s where their CPU is 9 ms: on 64 cores nearly all of the
    // 11 ms is a wait; on 1 core, shared with the main thread, GC and the client, part of it was
    // waiting for the core, which the simulated core gives again.
    const waitOn = async (cores: number, execMs: number, rateRps?: number): Promise<number> => {
      const file = join(dir, `profile-calibrated-${cores}-${execMs}-${rateRps}.json`);
      const profile = JSON.parse(
        readFileSync(writeProfile({ decode_ms: 0.3, check_ms: 0.1, encode_ms: 0.01, cores }), 'utf8'),
      );
      profile.serving_path.serve_cpu = {
        requests: 3000,
        main_ms: 0.81,
        worker_ms: 1,
        helpers_ms: 0.2,
        client_ms: 0.25,
        mean_batch: 8,
        exec_ms: execMs,
        rate_rps: rateRps,
      };
      writeFileSync(file, JSON.stringify(profile));
      return handoverWaitMsOf(
        await simulateWithInputs({ rate: 100, requests: 200, maxBatchSize: 8, latencyProfile: file }),
      );
    };
    const alone = await waitOn(64, 20, 300);
    const shared = await waitOn(1, 20, 300);
    expect(alone).toBeGreaterThan(1.2);
    expect(alone).toBeLessThanOrEqual(1.375);
    expect(shared).toBeLessThan(alone - 0.2);
    // Without the load it was measured at (an older profile), the whole difference is the wait.
    expect(await waitOn(1, 20)).toBeCloseTo(1.375, 6);
    // A batch time the shared core explains in full leaves no wait.
    expect(await waitOn(1, 9, 300)).toBe(0);
    // A load whose requests do not fill the last batch still ends (its window closes).
    expect(await waitOn(1, 20, 1001)).toBeLessThan(alone);
  });

  it("calibrates the hand-over's wait on the profile's serve as it ran: its batch limit, and its batches' size", async () => {
    // profile's serve ran batches of up to 16 (its largest profiled size) for a closed loop of 16
    // connections; they averaged 15.2 items and took just their run: 1 + 15.2 ms, nothing waited.
    const waitOf = async (execMs: number): Promise<number> => {
      const file = join(dir, `profile-limit-16-${execMs}.json`);
      const profile = JSON.parse(
        readFileSync(
          writeProfile({ decode_ms: 0.3, check_ms: 0.1, encode_ms: 0.01, cores: 64 }, [1, 2, 4, 8, 16]),
          'utf8',
        ),
      );
      profile.serving_path.serve_cpu = {
        requests: 3000,
        main_ms: 0.41,
        worker_ms: 1,
        helpers_ms: 0,
        client_ms: 0,
        mean_batch: 15.2,
        exec_ms: execMs,
        rate_rps: 700,
        connections: 16,
        pipeline: true,
      };
      writeFileSync(file, JSON.stringify(profile));
      return handoverWaitMsOf(
        await simulateWithInputs({ rate: 100, requests: 200, maxBatchSize: 16, latencyProfile: file }),
      );
    };
    // Batches that took their run: no wait.
    expect(await waitOf(16.2)).toBe(0);
    // What they took beyond it is the wait: 3.04 ms over 15.2 items. At the mean rounded (15) as
    // the limit, the loop of 16 left a request behind every two batches of 15, to run after them
    // in the mailbox: its simulated batches were not the real ones, their mean time (20.2 ms)
    // hid the real 19.24 ms, and the wait came out 0.
    expect(await waitOf(19.24)).toBeCloseTo(0.2, 1);
  });

  it('says which costs it was given and which it takes as zero', async () => {
    const text = formatReport(
      await simulateWithInputs({
        rate: 100,
        requests: 500,
        latencyProfile: writeProfile({ decode_ms: 0.5, check_ms: 0.1, encode_ms: 0.01, cores: 2 }),
      }),
    );
    expect(text).toMatch(
      /costs given main thread, per request: reading its JSON 0\.5 ms \(1000 bytes\) and checking it 0\.1 ms/,
    );
    expect(text).toMatch(
      /instance thread, per batch: .* the run \(0\.9 \+ 1·n ms\) and the hand-over to it and back \(0\.1 \+ 0·n ms\)/,
    );
    expect(text).toMatch(/cores: 2 \(as profiled\), shared by the main thread and 1 instance/);
    expect(text).toMatch(/taken as 0 {2}HTTP parsing and socket I\/O/);
    const batchOnly = formatReport(simulate({ rate: 100, requests: 500 }).report);
    expect(batchOnly).toMatch(
      /taken as 0 {2}reading and checking each request, and encoding its answer \(serve's main thread\)/,
    );
    expect(batchOnly).toMatch(/CPU contention: the main thread and every instance each have a core of their own/);
  });
});
