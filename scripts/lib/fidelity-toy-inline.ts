/**
 * bench:fidelity's toy case at MODEL_LATENCY_MS=0: the embedded model runs inline on serve's main
 * thread with serve's inline mailbox (`--inline-mailbox`, 3 by default: the runs handed over in
 * one turn back to back, their answers after the last). simulate is given what a user has,
 * `batchline profile`'s profile of the embedded model (its runs and its serving path, inline), and
 * is run twice: with the inline mailbox as serve has it, and with `--inline-mailbox 0`, the model
 * simulate had before it modelled the mailbox, so one real run judges both.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  benchCompared,
  BIN,
  COMPARED_HEADERS,
  comparedCells,
  idle,
  openLoopBenchArgs,
  run,
  runBench,
  serveFlags,
  simulate,
  simulatedCompared,
  simulateSettings,
  startServe,
  table,
} from './fidelity.js';

export interface ToyInlineSettings {
  batching: { maxBatchSize: number; batchWindowMs: number; maxQueueSize: number; requestTimeoutMs: number };
  rates: number[];
  durationMs: number;
  warmupMs: number;
  seed: number;
}

const TOY_BODY = '{"inputs":[0.2,1.5,-0.3]}';

export async function toyInlineFidelity(s: ToyInlineSettings): Promise<string[]> {
  const lines: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'batchline-fidelity-toy-'));
  const profile = join(dir, 'profile.json');
  const sizes = Array.from({ length: s.batching.maxBatchSize }, (_, i) => i + 1).join(',');
  await idle(lines, 'the profile');
  await run([BIN, 'profile', '--batch-sizes', sizes, '--out', profile]);
  const flags = serveFlags(s.batching);
  lines.push(
    `serve (embedded model inline, --model-latency-ms 0, ${flags.join(' ')}, its default --inline-mailbox) under bench · ${s.durationMs / 1000} s per rate after ${s.warmupMs / 1000} s warm-up; simulate from \`batchline profile\` (serving path inline)`,
  );
  const serve = await startServe(['--model-latency-ms', '0', '--instances', '1', ...flags]);
  const rows: string[][] = [];
  try {
    for (const rate of s.rates) {
      await idle(lines, `${rate} req/s`);
      const real = await runBench(`${serve.url}/v1/infer`, [
        ...openLoopBenchArgs({ rateRps: rate, seed: s.seed, durationMs: s.durationMs, warmupMs: s.warmupMs }),
        '--method',
        'POST',
        '--body',
        TOY_BODY,
      ]);
      const generatorMs = real.generator.cpu_ms_per_request ?? 0;
      for (const [name, inlineMailbox] of [
        ['inline mailbox', undefined],
        ['--inline-mailbox 0', '0'],
      ] as const) {
        const sim = await simulate({
          latencyProfile: profile,
          modelLatencyMs: '0',
          instances: '1',
          ...simulateSettings(s.batching),
          rate: String(rate),
          arrival: 'poisson',
          duration: `${s.warmupMs + s.durationMs}ms`,
          seed: String(s.seed),
          generatorCpuMs: String(generatorMs),
          ...(inlineMailbox === undefined ? {} : { inlineMailbox }),
        });
        rows.push([
          String(rate),
          name,
          ...comparedCells(benchCompared(real), simulatedCompared(sim), 3),
          generatorMs.toFixed(4),
          sim.batch_size.mean.toFixed(2),
        ]);
      }
    }
  } finally {
    await serve.stop();
  }
  lines.push(table(['req/s', 'simulate', ...COMPARED_HEADERS, 'bench ms/req', 'sim batch'], rows));
  lines.push(
    "real = batchline bench (latency from each intended send); simulate is given bench's CPU a request (--generator-cpu-ms); err = (simulated − real) / real",
  );
  return lines;
}
