import type { InstanceHandle, InstanceLauncher, InstanceStops } from '../../src/model/instance-handle.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';

/** An instance the test drives: it answers, crashes or hangs when told to. */
export class FakeInstance implements InstanceHandle {
  readonly runs: {
    items: readonly ItemTensors[];
    resolve: (outputs: ItemTensors[]) => void;
    reject: (error: Error) => void;
  }[] = [];
  killed = false;
  closed = false;
  /** How many times it was asked to close: a real handle's second close takes the first's place. */
  closes = 0;
  private readonly waitingForRun: (() => void)[] = [];
  constructor(
    readonly name: string,
    private readonly onExit: (reason: string) => void,
    readonly stops: InstanceStops,
  ) {}
  readonly pid = undefined;
  run(items: readonly ItemTensors[]): Promise<ItemTensors[]> {
    return new Promise((resolve, reject) => {
      this.runs.push({ items, resolve, reject });
      for (const wake of this.waitingForRun.splice(0)) wake();
    });
  }
  /** Resolves once it holds a run (at once when it holds one). */
  async running(): Promise<void> {
    if (this.runs.length > 0) return;
    await new Promise<void>((resolve) => this.waitingForRun.push(resolve));
  }
  /** Answers its oldest run. */
  answer(): void {
    const run = this.runs.shift()!;
    run.resolve(run.items.map(() => ({ y: { data: Float32Array.of(this.name.length), shape: [1] } })));
  }
  crash(): void {
    for (const run of this.runs.splice(0)) run.reject(new Error('thread exited'));
    this.onExit('code 1');
  }
  kill(): void {
    this.killed = true;
    for (const run of this.runs.splice(0)) run.reject(new Error('killed'));
    this.onExit('signal SIGKILL');
  }
  async close(): Promise<string | undefined> {
    this.closed = true;
    this.closes++;
    return undefined;
  }
}

/**
 * Launches FakeInstances; `failNext` makes the next launches fail to load; `holdLaunches()` keeps
 * the launches from then on loading until the function it returns is called, so that a test
 * holds an instance down for as long as it needs, not for a backoff it races.
 */
export function fakeLauncher(stops: InstanceStops) {
  const launched: FakeInstance[] = [];
  let held: Promise<void> | undefined;
  const state = {
    failNext: 0,
    launches: 0,
    /** The load signal each launch was given, in order. */
    signals: [] as (AbortSignal | undefined)[],
    holdLaunches(): () => void {
      let release!: () => void;
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release();
      };
    },
  };
  const launcher: InstanceLauncher = async (onExit, _index, loadSignal) => {
    state.launches++;
    state.signals.push(loadSignal);
    if (held !== undefined) await held;
    if (state.failNext > 0) {
      state.failNext--;
      throw new Error('ENOENT: the model file is gone');
    }
    const instance = new FakeInstance(`i${launched.length}`, onExit, stops);
    launched.push(instance);
    return { handle: instance, inputs: [], outputs: [] };
  };
  return { launcher, launched, state };
}
