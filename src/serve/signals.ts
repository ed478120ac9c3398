/**
 * What `batchline serve` does on each signal an operator, a terminal or a supervisor sends
 * (docs/reliability.md, "Signals"). Every signal whose default would end the process is handled,
 * so that none ends it with answers owed:
 *
 * - `drain`: SIGTERM (supervisors, `docker stop`, Kubernetes), SIGINT (Ctrl-C), SIGQUIT (nginx's
 *   graceful stop) and SIGHUP (the terminal closed; batchline has no configuration file to
 *   re-read): the first drains, a second stops waiting for the work still running, never for the
 *   answers already decided.
 * - `ignore` (with a log line): SIGUSR1, which Node would answer by opening its unauthenticated
 *   inspector on 127.0.0.1:9229 (nginx reopens its log files; batchline writes to stdout and
 *   stderr and has none), and SIGUSR2 (nginx's binary upgrade; there is nothing to upgrade to).
 */
export const SIGNAL_ACTIONS = {
  SIGTERM: 'drain',
  SIGINT: 'drain',
  SIGQUIT: 'drain',
  SIGHUP: 'drain',
  SIGUSR1: 'ignore',
  SIGUSR2: 'ignore',
} as const satisfies Partial<Record<NodeJS.Signals, 'drain' | 'ignore'>>;

/** Why an ignored signal changes nothing, for the log line. */
const IGNORED_BECAUSE: Record<string, string> = {
  SIGUSR1: 'no log files to reopen (the log is stdout and stderr), and the inspector stays closed',
  SIGUSR2: 'nothing to upgrade in place',
};

/** A quit that can be asked for twice: the first drains, the second stops waiting. */
export class SecondChance {
  private count = 0;
  private resolveFirst!: (reason: string) => void;
  private resolveSecond!: (reason: string) => void;
  readonly first = new Promise<string>((resolve) => (this.resolveFirst = resolve));
  readonly second = new Promise<string>((resolve) => (this.resolveSecond = resolve));

  fire(reason: string): void {
    this.count++;
    if (this.count === 1) this.resolveFirst(reason);
    else if (this.count === 2) this.resolveSecond(reason);
  }
}

/**
 * Listens for every signal of SIGNAL_ACTIONS: `drain` ones fire the returned chance (first, then
 * second), `ignore` ones are logged. `stop()` removes the listeners.
 */
export function watchSignals(log: (line: string) => void): { chance: SecondChance; stop(): void } {
  const chance = new SecondChance();
  const listeners = Object.entries(SIGNAL_ACTIONS).map(([signal, action]) => {
    const listener = (): void => {
      if (action === 'drain') chance.fire(signal);
      else log(`batchline serve: ${signal}: ignored (${IGNORED_BECAUSE[signal]}; SIGTERM drains)`);
    };
    process.on(signal, listener);
    return [signal, listener] as const;
  });
  return {
    chance,
    stop: () => {
      for (const [signal, listener] of listeners) process.off(signal, listener);
    },
  };
}
