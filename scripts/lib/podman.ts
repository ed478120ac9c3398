/**
 * podman as this project's scripts run it. The flags are the ones these machines need, kept here
 * rather than in a global containers.conf a user would have to write:
 * - `--runtime /usr/sbin/runc`: podman's default crun fails to start containers here;
 * - `--cgroup-manager cgroupfs` where systemd is not PID 1 (no systemd to hand cgroups to);
 * - `--ulimit nofile=… nproc=…` no higher than this process's own limits: podman asks for
 *   1048576 and 4194304 by default, which a root without CAP_SYS_RESOURCE may not set.
 * The storage driver is podman's own choice (overlay on ext4 here).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const RUNC = '/usr/sbin/runc';

/** The flags every podman command gets. */
export function podmanGlobalFlags(): string[] {
  return ['--runtime', RUNC, '--cgroup-manager', existsSync('/run/systemd/system') ? 'systemd' : 'cgroupfs'];
}

/** Resource limits a container (or a build's RUN step) may be given: never above this process's. */
export function podmanLimitFlags(): string[] {
  const hard = (flag: string): number => {
    const out = spawnSync('sh', ['-c', `ulimit -H${flag}`], { encoding: 'utf8' }).stdout.trim();
    return out === 'unlimited' ? Number.POSITIVE_INFINITY : Number(out) || 1024;
  };
  const nofile = Math.min(hard('n'), 65_536);
  const nproc = Math.min(hard('u'), 4096);
  return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `podman <global flags> …args`; never throws on a non-zero exit (the caller judges). */
export function podman(args: string[], timeoutMs = 600_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'podman',
      [...podmanGlobalFlags(), ...args],
      { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Why podman cannot run containers here, or undefined when it can (as far as can be told without one). */
export async function whyPodmanCannotRun(): Promise<string | undefined> {
  if (spawnSync('podman', ['--version']).error !== undefined) return 'podman is not installed (apt-get install podman)';
  if (!existsSync(RUNC)) return `${RUNC} is missing (apt-get install runc)`;
  const info = await podman(['info', '--format', '{{.Host.OCIRuntime.Name}}'], 60_000);
  if (info.code !== 0) return `podman info failed: ${info.stderr.trim().split('\n').at(-1)}`;
  return undefined;
}
