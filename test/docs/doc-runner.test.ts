/**
 * How the docs test reads a guide and what it changes in a command before running it: the parts
 * a guide's author relies on when writing a block (test/docs/guide-blocks.ts, test/docs/doc-runner.ts).
 */
import { describe, expect, it } from 'vitest';
import type { BenchResult } from '../../src/bench/result.js';
import { nothingSucceeded } from '../../src/commands/bench-exit-codes.js';
import { adapt, GuideSession, SENT_NOTHING_RUNS, sentNothing } from './doc-runner.js';
import { type DocCommand, guidePort, parseGuide } from './guide-blocks.js';

const command = (text: string): DocCommand => ({ line: 1, text, exits: [0], prints: [], server: false });

describe('parseGuide', () => {
  it('reads ```bash and ```sh blocks, their exits, their printed lines and their skip markers', () => {
    const guide = [
      '```sh',
      'batchline serve --port 18431                 # terminal 1',
      '```',
      '',
      '```bash',
      "npx batchline bench -R 300 --threshold 'p95<50ms' \\",
      '  localhost:8080/v1/infer                    # exits 1 if p95 is over 50 ms',
      'npx batchline bench compare before.json after.json',
      '# → verdict: …',
      '```',
      '',
      '<!-- doc-test: skip — needs a cluster -->',
      '```bash',
      'kubectl apply -k deploy/kubernetes',
      '```',
      '',
      '```python',
      'print(1)',
      '```',
    ].join('\n');
    const blocks = parseGuide(guide);
    expect(blocks).toHaveLength(3);
    expect(blocks[0]?.commands[0]?.server).toBe(true);
    expect(blocks[1]?.commands.map((c) => c.exits)).toEqual([[0, 1], [0]]);
    expect(blocks[1]?.commands[1]?.prints).toEqual(['verdict: …']);
    expect(blocks[2]?.skip).toBe('needs a cluster');
  });
});

describe('adapt', () => {
  it("points the guide's address at the server the test started, whichever port the guide gave it", () => {
    expect(guidePort('batchline serve --port 18431')).toBe(18431);
    expect(guidePort('npx batchline serve --max-batch-size 32')).toBe(8080);
    const text = adapt(command('curl -s localhost:18431/v1/infer http://127.0.0.1:8080/x'), {
      port: 40123,
      guidePort: 18431,
    });
    expect(text).toBe('curl -s 127.0.0.1:40123/v1/infer http://127.0.0.1:8080/x');
  });

  it('runs bench for 1 s without warm-up: a given duration, none (its default is 10 s), and every stage', () => {
    expect(adapt(command('batchline bench -c 64 -d 30 --warmup 5s $URL'))).toBe(
      'batchline bench --warmup 0 -c 64 -d 1 $URL',
    );
    expect(adapt(command('batchline bench $URL'))).toBe('batchline bench --warmup 0 -d 1 $URL');
    expect(adapt(command("batchline bench --stages '10s:200,10s:800,1m:800' $URL"))).toBe(
      "batchline bench --warmup 0 --stages '1s:200,1s:800,1s:800' $URL",
    );
    expect(adapt(command('batchline bench -n 100 $URL'))).toBe('batchline bench --warmup 0 -n 100 $URL');
    expect(adapt(command('batchline bench compare a.json b.json'))).toBe('batchline bench compare a.json b.json');
  });
});

describe('a bench that sent nothing', () => {
  const measured = (sent: number) =>
    nothingSucceeded({ requests: { ok: 0, sent }, errors: {}, status: {} } as unknown as BenchResult) ?? '';

  it("is told by bench's own words: nothing sent, not nothing answered", () => {
    expect(sentNothing(`…\n${measured(0)}\n`)).toBe(true);
    expect(sentNothing(measured(3))).toBe(false);
    expect(sentNothing(measured(10))).toBe(false);
  });

  it('runs again, up to SENT_NOTHING_RUNS in all, only where the guide does not allow its exit', async () => {
    const session = new GuideSession('guide.md');
    // Each run counts itself in a file, says bench's words until `sendsFrom`, then prints `done`
    // (the words printed in two parts: the runner rewrites a `batchline bench` it reads).
    const words = measured(0).replace(/^batchline /, '');
    const bench = (sendsFrom: number, exits = [0]): DocCommand => ({
      ...command(
        `echo . >> runs; if [ $(wc -l < runs) -lt ${sendsFrom} ]; then printf '%s %s\\n' batchline '${words}'; false; else echo done; fi`,
      ),
      exits,
      prints: ['done'],
    });
    const runs = async (sendsFrom: number, exits?: number[]): Promise<number> => {
      await session.run(bench(sendsFrom, exits));
      const count = (await session.run(command('wc -l < runs; rm runs')), session.transcript.at(-1) ?? '');
      return Number(/\n\s*(\d+)/.exec(count)?.[1]);
    };
    try {
      expect(await runs(2)).toBe(2);
      expect(session.failures).toEqual([]);
      expect(await runs(SENT_NOTHING_RUNS + 1)).toBe(SENT_NOTHING_RUNS);
      expect(session.failures).toHaveLength(2);
      expect(session.failures[0]).toMatch(/exited 1, the guide says 0\n/);
      expect(session.failures[1]).toMatch(/did not print "done"/);
      expect(await runs(2, [1])).toBe(1);
      expect(session.failures).toHaveLength(3);
    } finally {
      await session.close();
    }
  });
});

describe("a guide's server and the variables the guide set", () => {
  const serve = (text: string): DocCommand => ({ ...command(text), server: true });

  it('reach a server started with `&` in the same shell, not one in terminal 1 (another shell)', async () => {
    const session = new GuideSession('guide.md');
    try {
      await session.run(command('SIZE=4'));
      await session.run(serve('npx batchline serve --max-batch-size $SIZE &'));
      expect(session.failures).toEqual([]);
      // The runner records a server that never listened and stops the guide there.
      await expect(session.run(serve('npx batchline serve --max-batch-size $SIZE     # terminal 1'))).rejects.toThrow(
        /the server exited before it listened/,
      );
    } finally {
      await session.close();
    }
  }, 60_000);
});
