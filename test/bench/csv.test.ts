import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import type { BenchOutputs } from '../../src/commands/bench-outputs.js';
import { startTestServer } from '../serve/test-server.js';
import { tempDir } from '../temp-dir.js';
import { validated } from './plan-helper.js';
import { fixedDelayServer } from './servers.js';
import { TextSink } from './text-sink.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const outputs: BenchOutputs = { json: undefined, hdrLog: undefined, sweep: undefined, slo: 'p99<5s', quiet: true };

/** The file read back by Python's csv module, as a perf_analyzer user's script would: rows of column → cell. */
function readCsv(path: string): Record<string, string>[] {
  const script = 'import csv, json, sys; print(json.dumps(list(csv.DictReader(open(sys.argv[1], newline="")))))';
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, path], { encoding: 'utf8' }));
}

const PERF_ANALYZER_HEADER =
  'Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,response wait';

describe("--csv: perf_analyzer's -f file", () => {
  it("writes a row a step of --sweep-connections with perf_analyzer's columns in µs, the server's from its statistics", async () => {
    const server = await startTestServer({ modelLatencyMs: 2, maxBatchSize: 4 });
    close = server.close;
    const csv = join(tempDir('bench-csv-'), 'results.csv');
    await benchMain(
      validated(`${server.url}/v1/infer`, { warmup: '0', duration: '300ms', sweepConnections: '1,2', csv }),
      { ...outputs, sweepConnections: '1,2', csv, json: '-' },
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    const rows = readCsv(csv);
    expect(rows).toHaveLength(2);
    expect(Object.keys(rows[0] ?? {}).join(',')).toBe(
      `Concurrency,${PERF_ANALYZER_HEADER},Connections,Answered/Second,Errors,p99.9 latency,Max latency,Avg service,Server Inferences,Server Batch,Windows,Stable,Verdict`,
    );
    expect(rows.map((r) => r.Concurrency)).toEqual(['1', '2']);
    for (const row of rows) {
      expect(Number(row['Inferences/Second'])).toBeGreaterThan(0);
      const [p50, p90, p99] = ['p50 latency', 'p90 latency', 'p99 latency'].map((c) => Number(row[c]));
      // Integer µs, as perf_analyzer writes them: a 2 ms model answers in thousands of them.
      expect(Number.isInteger(p50)).toBe(true);
      expect(p50).toBeGreaterThanOrEqual(2000);
      expect(p90).toBeGreaterThanOrEqual(p50 as number);
      expect(p99).toBeGreaterThanOrEqual(p90 as number);
      expect(Number(row['Server Compute Infer'])).toBeGreaterThanOrEqual(2000);
      expect(row['Server Queue']).toMatch(/^\d+$/);
      expect(row['Network+Server Send/Recv']).toMatch(/^\d+$/);
      expect(Number(row['Server Inferences'])).toBeGreaterThan(0);
      // What bench does not split is left empty, not written as 0.
      expect([row['Client Send'], row['Client Recv'], row['request/response'], row['response wait']]).toEqual([
        '',
        '',
        '',
        '',
      ]);
      expect([row.Windows, row.Stable]).toEqual(['', '']);
    }
  });

  it('writes the open loop as Request Rate, empty server columns for a server without statistics, and the windows of --stable', async () => {
    const server = await fixedDelayServer(5);
    close = server.close;
    const csv = join(tempDir('bench-csv-'), 'results.csv');
    await benchMain(
      validated(`${server.url}infer`, { warmup: '0', rate: '50', stable: '100', window: '300ms', csv }),
      { ...outputs, csv, json: '-' },
      { stdout: new TextSink(), stderr: new TextSink(), env: {} },
    );
    const rows = readCsv(csv);
    expect(rows).toHaveLength(1);
    const row = rows[0] as Record<string, string>;
    expect(row['Request Rate']).toBe('50');
    expect(Number(row['p50 latency'])).toBeGreaterThanOrEqual(5000);
    for (const column of ['Server Queue', 'Server Compute Infer', 'Network+Server Send/Recv', 'Server Batch'])
      expect(row[column]).toBe('');
    expect(row.Stable).toBe('yes');
    expect(Number(row.Windows)).toBeGreaterThanOrEqual(3);
  });

  it("refuses '-': the CSV is a file, as perf_analyzer's -f", async () => {
    await expect(
      benchMain(
        validated('http://127.0.0.1:1/'),
        { ...outputs, csv: '-' },
        { stdout: new TextSink(), stderr: new TextSink(), env: {} },
      ),
    ).rejects.toThrow("--csv: got '-', expected a file's path (as perf_analyzer's -f)");
  });
});

describe('--csv and the report with answers that are not 2xx', () => {
  // A 429 is answered in a millisecond and the server's times are its inferences': set against
  // each other, the report's `outside` read -45.359 ms and the CSV's Network+Server Send/Recv 0.
  it('leaves Network+Server Send/Recv empty and prints no outside line', async () => {
    const server = await startTestServer({ modelLatencyMs: 20, maxBatchSize: 2, maxQueueSize: 1, holdRetries: false });
    close = server.close;
    const csv = join(tempDir('bench-csv-'), 'results.csv');
    const stdout = new TextSink();
    await benchMain(
      validated(`${server.url}/v1/infer`, { warmup: '0', duration: '300ms', connections: '16', csv }),
      { ...outputs, csv, quiet: false },
      { stdout, stderr: new TextSink(), env: {} },
    );
    const [row] = readCsv(csv);
    expect(Number(row?.Errors)).toBeGreaterThan(0);
    expect(row?.['Server Queue']).toMatch(/^\d+$/);
    expect(row?.['Network+Server Send/Recv']).toBe('');
    expect(stdout.text).toContain('Server: ');
    expect(stdout.text).not.toContain('outside');
  }, 30_000);
});
