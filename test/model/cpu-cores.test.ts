import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { coresWithin, cpuQuotaCores, type ReadText } from '../../src/model/cpu-cores.js';

/** A /proc and /sys of the given files, as cpuQuotaCores reads them. */
const files =
  (tree: Record<string, string>): ReadText =>
  (path) =>
    tree[path];

const V1_MOUNTS = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '32 31 0:29 ROOT /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '33 31 0:30 ROOT /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct',
].join('\n');

describe('the cores a CPU quota allows', () => {
  it('reads cgroup v1 inside a container (podman --cpus 1.5: its own cgroup at the mount point)', () => {
    const id = '/libpod_parent/libpod-b5ac33';
    const read = files({
      '/proc/self/cgroup': `4:memory:${id}\n2:cpuacct:${id}\n1:cpu:${id}\n0::/\n`,
      '/proc/self/mountinfo': V1_MOUNTS.replaceAll('ROOT', id),
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '150000\n',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
    });
    expect(cpuQuotaCores(read)).toBe(1.5);
    expect(coresWithin(1.5, 64)).toBe(1);
  });

  it('reads cgroup v1 on a host, and finds none where the quota is -1', () => {
    const tree = {
      '/proc/self/cgroup': '1:cpu,cpuacct:/batch/job\n',
      '/proc/self/mountinfo': V1_MOUNTS.replaceAll('ROOT', '/').replace('rw,cpu\n', 'rw,cpu,cpuacct\n'),
      '/sys/fs/cgroup/cpu/batch/job/cpu.cfs_quota_us': '-1',
      '/sys/fs/cgroup/cpu/batch/job/cpu.cfs_period_us': '100000',
      '/sys/fs/cgroup/cpu/batch/cpu.cfs_quota_us': '400000',
      '/sys/fs/cgroup/cpu/batch/cpu.cfs_period_us': '100000',
    };
    expect(cpuQuotaCores(files(tree))).toBe(4);
    expect(cpuQuotaCores(files({ ...tree, '/sys/fs/cgroup/cpu/batch/cpu.cfs_quota_us': '-1' }))).toBeUndefined();
  });

  it("reads cgroup v2's cpu.max up the tree: a Kubernetes pod's limit above a container's max", () => {
    const read = files({
      '/proc/self/cgroup': '0::/kubepods.slice/pod1/cri-abc\n',
      '/proc/self/mountinfo': '40 30 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate',
      '/sys/fs/cgroup/kubepods.slice/pod1/cri-abc/cpu.max': 'max 100000\n',
      '/sys/fs/cgroup/kubepods.slice/pod1/cpu.max': '200000 100000\n',
      '/sys/fs/cgroup/kubepods.slice/cpu.max': 'max 100000\n',
    });
    expect(cpuQuotaCores(read)).toBe(2);
  });

  it('reads cgroup v2 in a cgroup namespace (0::/), and finds none without a cpu.max', () => {
    const mountinfo = '40 30 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw';
    const read = files({ '/proc/self/cgroup': '0::/\n', '/proc/self/mountinfo': mountinfo });
    expect(cpuQuotaCores(read)).toBeUndefined();
    expect(
      cpuQuotaCores(
        files({
          '/proc/self/cgroup': '0::/\n',
          '/proc/self/mountinfo': mountinfo,
          '/sys/fs/cgroup/cpu.max': '50000 100000',
        }),
      ),
    ).toBe(0.5);
    expect(coresWithin(0.5, 8)).toBe(1);
    expect(coresWithin(undefined, 8)).toBe(8);
    expect(coresWithin(16, 8)).toBe(8);
  });
});

// A real cgroup v1 with a quota of one core: the process in it sizes its shared model threads
// and its load gate by that core. Needs root, a writable cpu hierarchy and two cores or more.
const CPU_V1 = '/sys/fs/cgroup/cpu';
const whyNot =
  process.getuid?.() !== 0
    ? 'not root'
    : !existsSync(join(CPU_V1, 'cpu.cfs_quota_us'))
      ? 'no cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu'
      : availableParallelism() < 2
        ? 'one core: a quota of one changes nothing'
        : undefined;
if (whyNot !== undefined) console.log(`cpu-cores.test: the real cgroup test is skipped: ${whyNot}`);

describe.skipIf(whyNot !== undefined)('in a cgroup limited to one core', () => {
  it("sizes --execution shared's model threads and the load gate by the quota, not the host's cores", async () => {
    const group = join(CPU_V1, `batchline-test-${process.pid}`);
    mkdirSync(group);
    try {
      writeFileSync(join(group, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(group, 'cpu.cfs_quota_us'), '100000');
      const dist = new URL('../../dist/src/model/', import.meta.url).href;
      const script = [
        `const { modelThreads } = await import('${dist}model-threads.js');`,
        `const { instanceLoads } = await import('${dist}load-gate.js');`,
        `console.log(JSON.stringify({ threads: modelThreads(new URL('${dist}model-host.js')).limit, loads: instanceLoads.limit }));`,
      ].join('\n');
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(
          'sh',
          [
            '-c',
            `echo $$ > ${join(group, 'cgroup.procs')} && exec "$0" --input-type=module -e "$1"`,
            process.execPath,
            script,
          ],
          (error, out) => (error === null ? resolve(out) : reject(error)),
        ),
      );
      expect(JSON.parse(stdout)).toEqual({ threads: 1, loads: 2 });
    } finally {
      rmdirSync(group);
    }
  });
});
