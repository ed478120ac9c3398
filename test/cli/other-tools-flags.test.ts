import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { otherToolsFlagHint } from '../../src/commands/bench-other-tools.js';
import { runBatchline } from '../batchline-cli.js';

const unknown = (flag: string) => new CommanderError(1, 'commander.unknownOption', `error: unknown option '${flag}'`);
const argv = (...args: string[]) => ['node', 'batchline', ...args];

describe('bench and the flags of wrk, wrk2, k6, hey and ab', () => {
  it("answers a flag typed from another tool's habit with bench's way, however it was written", () => {
    for (const given of ['-t', '-t4', '--threads', '--threads=4'])
      expect(otherToolsFlagHint(argv('bench', given, 'x'), unknown(given))).toContain('--workers');
    expect(otherToolsFlagHint(argv('bench', '--stage', '5s:10'), unknown('--stage'))).toContain(
      '--stages 30s:100,1m:100',
    );
    expect(otherToolsFlagHint(argv('bench', '--u_latency'), unknown('--u_latency'))).toContain('service row');
    expect(otherToolsFlagHint(argv('bench', '--vus', '10'), unknown('--vus'))).toContain('--connections');
    expect(otherToolsFlagHint(argv('bench', '--out=json=x'), unknown('--out=json=x'))).toContain('--json FILE');
  });

  it('says nothing of a flag no other tool has, nor outside bench runs', () => {
    expect(otherToolsFlagHint(argv('bench', '--bogus'), unknown('--bogus'))).toBeUndefined();
    expect(otherToolsFlagHint(argv('serve', '-t'), unknown('-t'))).toBeUndefined();
    expect(otherToolsFlagHint(argv('bench', 'compare', 'a', 'b', '-t'), unknown('-t'))).toBeUndefined();
  });

  it('prints it after the unknown option and exits 2', async () => {
    const result = await runBatchline(['bench', '-t', '4', 'localhost:1/']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("error: unknown option '-t'\n");
    expect(result.stderr).toContain("batchline bench: -t is wrk's threads: bench's is --workers N");
  });
});
