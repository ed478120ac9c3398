/**
 * vi.waitFor's bound for a frame or a read that is coming (vitest's default is 1 s). It is only a
 * guard against a hang, so it is generous: on a loaded host a first React render, or a process
 * stalled for seconds, outruns 1 s, and a waitFor passes as soon as its check does, whatever the
 * bound. Checked every 20 ms, about an Ink frame.
 */
export const PATIENCE = { timeout: 30_000, interval: 20 };
