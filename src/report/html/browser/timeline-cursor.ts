import type { CoreEvent } from '../../../core/event-log.js';
import {
  applyEvent,
  arrivalTimes,
  START_DESCRIPTION,
  startState,
  type TimelineSettings,
  type TimelineState,
} from '../../timeline-model.js';

/** Checkpoints kept: the state after every this many events. */
const CHECKPOINT_EVERY = 256;

/** The scenario after `index` events (0 = before the first). */
export interface TimelinePosition {
  index: number;
  atMs: number;
  state: TimelineState;
  /** The event that led here, in the terminal timeline's words. */
  description: string;
  subjects: readonly string[];
  event: CoreEvent | undefined;
}

/**
 * Steps through a run's events with the terminal timeline's own model (`applyEvent`), keeping
 * a checkpoint every CHECKPOINT_EVERY events instead of every frame, so a run of hundreds of
 * thousands of events seeks in a few hundred steps at most.
 */
export class TimelineCursor {
  private readonly checkpoints: TimelineState[] = [];
  private readonly arrivals: Map<string, number>;
  /** For each position, the index of the last batch start and of the last breaker change before it (-1: none). */
  private readonly lastBatchStart: Int32Array;
  private readonly lastBreaker: Int32Array;

  constructor(
    readonly events: readonly CoreEvent[],
    readonly settings: TimelineSettings,
  ) {
    this.arrivals = arrivalTimes(events);
    this.lastBatchStart = new Int32Array(events.length + 1).fill(-1);
    this.lastBreaker = new Int32Array(events.length + 1).fill(-1);
    for (let i = 0; i < events.length; i++) {
      const kind = (events[i] as CoreEvent).kind;
      this.lastBatchStart[i + 1] = kind === 'batch_started' ? i : (this.lastBatchStart[i] as number);
      this.lastBreaker[i + 1] = kind === 'breaker' ? i : (this.lastBreaker[i] as number);
    }
    let state = startState(settings);
    this.checkpoints.push(state);
    for (let i = 0; i < events.length; i++) {
      state = applyEvent(state, events[i] as CoreEvent, settings, this.arrivals).state;
      if ((i + 1) % CHECKPOINT_EVERY === 0) this.checkpoints.push(state);
    }
  }

  /** The batch limit and window the last batch left with, and the breaker's last state, at a position. */
  policyAt(index: number): { limit: number; windowMs: number } | undefined {
    const at = this.lastBatchStart[Math.max(0, Math.min(this.events.length, index))] as number;
    const event = at < 0 ? undefined : this.events[at];
    return event?.kind === 'batch_started' ? { limit: event.limit, windowMs: event.windowMs } : undefined;
  }

  breakerAt(index: number): string | undefined {
    const at = this.lastBreaker[Math.max(0, Math.min(this.events.length, index))] as number;
    const event = at < 0 ? undefined : this.events[at];
    return event?.kind === 'breaker' ? event.state : undefined;
  }

  get length(): number {
    return this.events.length;
  }

  at(index: number): TimelinePosition {
    const target = Math.max(0, Math.min(this.events.length, Math.round(index)));
    if (target === 0) {
      return {
        index: 0,
        atMs: this.events[0]?.atMs ?? 0,
        state: this.checkpoints[0] as TimelineState,
        description: START_DESCRIPTION,
        subjects: [],
        event: undefined,
      };
    }
    // Replay from the checkpoint before the last event, so that event's words are known.
    const from = Math.floor((target - 1) / CHECKPOINT_EVERY);
    let state = this.checkpoints[from] as TimelineState;
    let step: ReturnType<typeof applyEvent> | undefined;
    for (let i = from * CHECKPOINT_EVERY; i < target; i++) {
      step = applyEvent(state, this.events[i] as CoreEvent, this.settings, this.arrivals);
      state = step.state;
    }
    const event = this.events[target - 1] as CoreEvent;
    return {
      index: target,
      atMs: event.atMs,
      state,
      description: step?.description ?? '',
      subjects: step?.subjects ?? [],
      event,
    };
  }
}
