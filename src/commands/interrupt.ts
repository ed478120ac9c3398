/** The exit status of a process a signal ended (128 + its number), as shells report it. */
export const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

export type StopSignal = keyof typeof SIGNAL_EXIT;

/**
 * Ctrl-C (or SIGTERM) ends a command the way k6 ends a run: the first aborts `stop` (the command
 * winds down and reports what it has), a second quits at once with 128 + the signal's number.
 * Listening with `on` until the returned function is called: Ink's signal-exit re-raises a signal
 * that finds no other listener, so a one-shot listener left a dashboard to die of the first.
 * `first` is told of the first signal (bench says what it waits for).
 */
export function trapInterrupt(stop: AbortController, first: (signal: StopSignal) => void = () => {}): () => void {
  const onSignal = (signal: StopSignal): void => {
    if (!stop.signal.aborted) {
      first(signal);
      stop.abort();
      return;
    }
    quitAtOnce(signal);
  };
  for (const signal of Object.keys(SIGNAL_EXIT)) process.on(signal, onSignal);
  return () => {
    for (const signal of Object.keys(SIGNAL_EXIT)) process.off(signal, onSignal);
  };
}

/**
 * A second Ctrl-C (or SIGTERM, or bench's dashboard's second `q`) quits at once, with 128 + the
 * signal's number: from a signal's or a key's handler, where there is no caller to throw to.
 */
export function quitAtOnce(signal: StopSignal): never {
  process.exit(SIGNAL_EXIT[signal]);
}
