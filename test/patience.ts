/**
 * The bound of a wait for something that is coming: a frame, a read, a socket's close, a state of
 * the server. It is only a guard against a hang, so it is generous: a wait ends as soon as what it
 * awaits happens, whatever the bound, and on a loaded host a first React render, or a process
 * stalled for seconds, outruns a bound of 1 s (vitest's default for vi.waitFor). 30 s leaves the
 * 60 s test timeout room to say which wait failed.
 */
export const PATIENCE_MS = 30_000;

/** vi.waitFor's options with PATIENCE_MS: checked every 20 ms, about an Ink frame. */
export const PATIENCE = { timeout: PATIENCE_MS, interval: 20 };
