import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running the built module at `script`, whatever flags this process was started
 * with. The thread imports it from a line of code instead of taking it as its main module: a
 * thread inherits the process's flags, and a main module under an inherited `--input-type` (a
 * process started as `node --input-type=module -e …`, or reading its code from STDIN) is refused
 * with ERR_INPUT_TYPE_NOT_ALLOWED, where an import is not. Giving the thread the flags without that
 * one (`execArgv`) would fail instead on every flag a thread may not take (--max-old-space-size).
 * A module that fails to load still ends the thread with its error, whatever
 * --unhandled-rejections says.
 */
export function startThread(script: URL, options: WorkerOptions = {}): Worker {
  const code = `import(${JSON.stringify(script.href)}).catch((error) => process.nextTick(() => { throw error; }));`;
  return new Worker(code, { ...options, eval: true });
}
