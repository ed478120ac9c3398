/**
 * Loaded with `node --import` into a process whose whole CPU time a benchmark wants: at exit it
 * writes `{"cpuMs": user + system of every thread, "wallMs": since the process started}` to the
 * file named by CPU_REPORT_FILE.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const file = process.env.CPU_REPORT_FILE;
if (file !== undefined)
  process.on('exit', () => {
    const { user, system } = process.cpuUsage();
    writeFileSync(file, JSON.stringify({ cpuMs: (user + system) / 1000, wallMs: performance.now() }));
  });
