import { availableCores } from './cpu-cores.js';

/**
 * How long one instance's load may hold its turn: a load that takes longer (a code model whose
 * `initialize` waits on something outside) lets the next one start, so one slow model never
 * holds the others back for good (ms).
 */
const TURN_LIMIT_MS = 5000;

/**
 * Lets at most `limit` model instances load at once. A load is mostly CPU (a thread's isolate,
 * onnxruntime's module, the session's graph optimisation): 200 models loading together on two
 * cores took 25.8 s of CPU and 22.4 s to ready, in turns of two 21.9-29.1 s of CPU and 16 s.
 */
export class LoadGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly limit: number,
    private readonly turnLimitMs = TURN_LIMIT_MS,
  ) {}

  /** Waits for a turn; the function it resolves to ends the turn (once; later calls do nothing). */
  async enter(): Promise<() => void> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    let left = false;
    const leave = (): void => {
      if (left) return;
      left = true;
      clearTimeout(timer);
      const next = this.waiting.shift();
      if (next === undefined) this.running--;
      else next(); // the turn passes on: `running` stays
    };
    const timer = setTimeout(leave, this.turnLimitMs);
    timer.unref();
    return leave;
  }

  /** Loads that are running, and waiting for a turn. */
  get counts(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}

/**
 * The process's gate for model instances on threads and in processes: two loads a core. A load
 * waits about half its time (a thread's start, messages to and from the main thread): with one
 * a core, 50 models loading on two cores kept one busy (6.0 s of CPU in 6.1 s).
 */
export const instanceLoads = new LoadGate(2 * availableCores());
