import { readFileSync } from 'node:fs';

/**
 * User + system CPU time of a process so far, every thread, in ms, from Linux's /proc (clock
 * ticks of 10 ms). With `withChildren`, its child processes' too (serve's process instances),
 * read while they run.
 */
export function processCpuMs(pid: number, withChildren = false): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const own = (Number(fields[11]) + Number(fields[12])) * 10;
  if (!withChildren) return own;
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter((child) => child !== '');
  return own + children.reduce((sum, child) => sum + processCpuMs(Number(child), true), 0);
}

/**
 * User + system CPU time of one thread of a process so far, in ms (clock ticks of 10 ms): a
 * Node process's main thread is the thread whose id is the process's.
 */
export function threadCpuMs(pid: number, tid = pid): number {
  const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
