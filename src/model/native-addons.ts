/**
 * Tells once when this thread loads a native addon. A code model's thread runs JavaScript, which
 * `worker.terminate()` interrupts at once; inside an addon's call it waits for the call to
 * return, and onnxruntime-node then throws a C++ exception nobody catches: the whole process
 * aborts. The server stops terminating the thread from the moment it hears of one.
 *
 * Every addon is loaded through `process.dlopen` (require's `.node` loader looks it up at each
 * load), which is this thread's own: a worker has a `process` object of its own.
 */
export function watchNativeAddons(onFirst: (addon: string) => void): void {
  const dlopen = process.dlopen;
  process.dlopen = function watchedDlopen(this: unknown, ...args: Parameters<typeof process.dlopen>) {
    process.dlopen = dlopen;
    // Told before the addon runs anything: the server must not terminate the thread from here on.
    onFirst(String(args[1]));
    return Reflect.apply(dlopen, this, args) as ReturnType<typeof process.dlopen>;
  };
}
