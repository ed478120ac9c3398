/**
 * How the docs test reads a guide and what it changes in a command before running it: the parts
 * a guide's author relies on when writing a block (test/docs/doc-runner.ts).
 */
import { describe, expect, it } from 'vitest';
import { adapt, type DocCommand, guidePort, parseGuide } from './doc-runner.js';

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
