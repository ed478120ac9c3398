import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The cores this process may use: the CPUs it may run on, capped by its cgroup's CPU quota (a
 * container's `--cpus`, a Kubernetes pod's `limits.cpu`). Node 20's `availableParallelism()`
 * counts the CPUs only (libuv reads the quota from 1.49 on, Node 22): a pod limited to 2 cores
 * on a 64-core node got 64 shared model threads and onnxruntime's `--intra-op-threads 0` 64
 * threads a run, each getting a thirty-second of the time it was sized for.
 */
export function availableCores(): number {
  cores ??= coresWithin(cpuQuotaCores());
  return cores;
}

let cores: number | undefined;

/** The host's count of usable CPUs, capped by a quota (whole cores, at least one). */
export function coresWithin(quotaCores: number | undefined, cpus = availableParallelism()): number {
  return quotaCores === undefined ? cpus : Math.max(1, Math.min(cpus, Math.floor(quotaCores)));
}

/** Reads a file's text, or undefined when it cannot. */
export type ReadText = (path: string) => string | undefined;

const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/**
 * The CPU quota of this process's cgroup and its ancestors, in cores (the smallest; 1.5 for
 * 150000 µs a 100000 µs period), or undefined when none is set or none can be read. cgroup v2
 * (`cpu.max`) and v1 (`cpu.cfs_quota_us` / `cpu.cfs_period_us`), found through
 * /proc/self/mountinfo, as libuv and Rust's `available_parallelism` find them.
 */
export function cpuQuotaCores(read: ReadText = readText): number | undefined {
  const memberships = (read('/proc/self/cgroup') ?? '').split('\n');
  const mounts = (read('/proc/self/mountinfo') ?? '').split('\n').map(mountOf);
  const v2 = mounts.find((mount) => mount?.type === 'cgroup2');
  const v2Path = memberships.find((line) => line.startsWith('0::'))?.slice(3);
  if (v2 !== undefined && v2Path !== undefined) {
    const quota = smallestUp(v2, v2Path, (dir) => {
      const [max, period] = (read(join(dir, 'cpu.max')) ?? '').trim().split(' ');
      return max === undefined || max === 'max' || max === '' ? undefined : Number(max) / Number(period);
    });
    if (quota !== undefined) return quota;
  }
  const v1 = mounts.find((mount) => mount?.type === 'cgroup' && mount.options.includes('cpu'));
  const v1Path = memberships
    .map((line) => line.split(':'))
    .find((fields) => fields[1]?.split(',').includes('cpu'))?.[2];
  if (v1 === undefined || v1Path === undefined) return undefined;
  return smallestUp(v1, v1Path, (dir) => {
    const quota = Number(read(join(dir, 'cpu.cfs_quota_us')));
    const period = Number(read(join(dir, 'cpu.cfs_period_us')));
    return quota > 0 && period > 0 ? quota / period : undefined;
  });
}

interface CgroupMount {
  /** The cgroup the mount shows at its mount point (`/` unless a container's view). */
  root: string;
  mountPoint: string;
  type: string;
  options: string[];
}

/** A line of /proc/self/mountinfo: `id parent dev root mountpoint opts [tags] - type source superopts`. */
function mountOf(line: string): CgroupMount | undefined {
  const [before, after] = line.split(' - ');
  const fields = before?.split(' ');
  const [type, , superOptions] = after?.split(' ') ?? [];
  if (fields === undefined || fields.length < 5 || type === undefined) return undefined;
  return { root: fields[3]!, mountPoint: fields[4]!, type, options: (superOptions ?? '').split(',') };
}

/** The smallest quota of the cgroup at `path` and of its ancestors visible under the mount. */
function smallestUp(
  mount: CgroupMount,
  path: string,
  quotaIn: (dir: string) => number | undefined,
): number | undefined {
  // Inside a container the mount shows its own cgroup at the mount point (root = its path).
  const relative = path.startsWith(mount.root) ? path.slice(mount.root.length) : '';
  let dir = join(mount.mountPoint, relative);
  let smallest: number | undefined;
  for (;;) {
    const quota = quotaIn(dir);
    if (quota !== undefined && Number.isFinite(quota) && quota > 0) smallest = Math.min(smallest ?? quota, quota);
    if (dir === mount.mountPoint || dir === dirname(dir)) return smallest;
    dir = dirname(dir);
  }
}
