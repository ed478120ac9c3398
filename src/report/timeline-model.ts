import type { CoreEvent } from '../core/event-log.js';
import type { BatchTrigger } from '../core/policy.js';
import type { OutcomeKind } from '../core/types.js';
import { formatMs } from './format.js';

/** The scenario's shape, which the events alone do not tell. */
export interface TimelineSettings {
  maxQueueSize: number;
  instances: number;
  maxBatchSize: number;
  /** The configured window: a batch that left under another limit or window says which. */
  batchWindowMs?: number;
}

export interface QueuedRequest {
  id: string;
  arrivalAtMs: number;
}

/** A request of a running batch: still running, or already answered (at its deadline, say). */
export interface BatchMember {
  id: string;
  /** undefined while running. */
  outcome: OutcomeKind | undefined;
}

export interface RunningBatch {
  batchId: number;
  startedAtMs: number;
  trigger: BatchTrigger;
  members: readonly BatchMember[];
}

export interface TimelineCounts {
  admitted: number;
  rejected: number;
  batches: number;
  outcomes: Record<OutcomeKind, number>;
}

/** The scenario after `index` events: what the step-through view draws. */
export interface TimelineFrame {
  /** 0 = before the first event; n = after the n-th. */
  index: number;
  atMs: number;
  queue: readonly QueuedRequest[];
  /** One entry per instance; undefined = idle. */
  running: readonly (RunningBatch | undefined)[];
  /** The event that led here (undefined for frame 0). */
  event: CoreEvent | undefined;
  /** That event in words. */
  description: string;
  /** Request ids the event is about, for highlighting. */
  subjects: readonly string[];
  counts: TimelineCounts;
}

/** The scenario between two events: what waits, what runs, what has happened so far. */
export interface TimelineState {
  queue: readonly QueuedRequest[];
  /** One entry per instance; undefined = idle. */
  running: readonly (RunningBatch | undefined)[];
  counts: TimelineCounts;
}

/** One event applied: the state after it, and the event in words. */
export interface TimelineStep {
  state: TimelineState;
  description: string;
  /** Request ids the event is about, for highlighting. */
  subjects: string[];
}

/** Before the first event: the queue empty, every instance idle. */
export function startState(settings: TimelineSettings): TimelineState {
  return {
    queue: [],
    running: new Array<RunningBatch | undefined>(settings.instances).fill(undefined),
    counts: {
      admitted: 0,
      rejected: 0,
      batches: 0,
      outcomes: { ok: 0, timeout: 0, error: 0, cancelled: 0, shutdown: 0, unavailable: 0 },
    },
  };
}

export const START_DESCRIPTION = 'start: the queue is empty and every instance idle';

/** Arrival time of every admitted request, by id. */
export function arrivalTimes(events: readonly CoreEvent[]): Map<string, number> {
  const arrivals = new Map<string, number>();
  for (const event of events) if (event.kind === 'admitted') arrivals.set(event.requestId, event.atMs);
  return arrivals;
}

/**
 * Applies one event to a state. Pure: the state given is never changed (arrays and counts are
 * replaced), so a viewer can keep earlier states as checkpoints and replay from them.
 */
export function applyEvent(
  previous: TimelineState,
  event: CoreEvent,
  settings: TimelineSettings,
  arrivals: ReadonlyMap<string, number>,
): TimelineStep {
  let { queue, running } = previous;
  const counts = cloneCounts(previous.counts);
  let description: string;
  let subjects: string[];
  switch (event.kind) {
    case 'admitted': {
      queue = [...queue, { id: event.requestId, arrivalAtMs: event.atMs }];
      counts.admitted++;
      subjects = [event.requestId];
      description = `${event.requestId} arrives and joins the queue (${event.queueDepth}/${settings.maxQueueSize} waiting)`;
      break;
    }
    case 'rejected': {
      counts.rejected++;
      subjects = [event.requestId];
      description = `${event.requestId} arrives: rejected, ${REJECTIONS[event.reason] ?? event.reason}`;
      if (event.reason === 'queue_full') description += ` (${event.queueDepth}/${settings.maxQueueSize} waiting)`;
      break;
    }
    case 'batch_started': {
      const taken = new Set(event.requestIds);
      const oldestArrival = Math.min(...event.requestIds.map((id) => arrivals.get(id) ?? event.atMs));
      queue = queue.filter((q) => !taken.has(q.id));
      running = running.slice();
      (running as (RunningBatch | undefined)[])[event.instance] = {
        batchId: event.batchId,
        startedAtMs: event.atMs,
        trigger: event.trigger,
        members: event.requestIds.map((id) => ({ id, outcome: undefined })),
      };
      counts.batches++;
      subjects = event.requestIds;
      const size = event.requestIds.length;
      const why =
        event.trigger === 'full'
          ? `full (${size} = ${event.limit === settings.maxBatchSize ? 'max' : 'limit'})`
          : event.trigger === 'window'
            ? `window closed (oldest waited ${formatMs(event.atMs - oldestArrival)})`
            : event.trigger === 'ready'
              ? 'enough to keep up with arrivals'
              : 'draining: no more waiting for company';
      // aimd and adaptive move the limit and window: say which applied when they differ from the flags.
      const moved =
        event.limit !== settings.maxBatchSize ||
        (settings.batchWindowMs !== undefined && event.windowMs !== settings.batchWindowMs);
      const policy = moved ? ` · limit ${event.limit}, window ${formatMs(event.windowMs)}` : '';
      description = `batch #${event.batchId} starts on instance ${event.instance}: ${size} request${size === 1 ? '' : 's'}, ${why}${policy}`;
      break;
    }
    case 'batch_finished': {
      const batch = running[event.instance];
      running = running.slice();
      (running as (RunningBatch | undefined)[])[event.instance] = undefined;
      subjects = batch?.members.map((m) => m.id) ?? [];
      const took = batch === undefined ? '' : ` after ${formatMs(event.atMs - batch.startedAtMs)}`;
      description = `batch #${event.batchId} ${event.failed ? 'fails' : 'finishes'} on instance ${event.instance}${took}`;
      break;
    }
    case 'isolation_run': {
      subjects = event.requestIds;
      const size = event.requestIds.length;
      description = `batch #${event.batchId} re-runs ${size === 1 ? `${event.requestIds[0]} alone` : `${size} of its requests`} to find the bad one: ${event.failed ? 'fails' : 'passes'} (${formatMs(event.atMs - event.startedAtMs)})`;
      break;
    }
    case 'breaker': {
      subjects = [];
      description = BREAKER_STATES[event.state];
      break;
    }
    case 'request_finished': {
      counts.outcomes[event.outcome]++;
      subjects = [event.requestId];
      const waited = formatMs(event.atMs - (arrivals.get(event.requestId) ?? event.atMs));
      if (event.endedIn === 'queued') {
        queue = queue.filter((q) => q.id !== event.requestId);
      } else if (event.endedIn === 'running') {
        running = running.map((batch) =>
          batch === undefined || !batch.members.some((m) => m.id === event.requestId)
            ? batch
            : {
                ...batch,
                members: batch.members.map((m) => (m.id === event.requestId ? { ...m, outcome: event.outcome } : m)),
              },
        );
      }
      description = describeFinish(event.requestId, event.outcome, event.endedIn, waited);
      break;
    }
  }
  return { state: { queue, running, counts }, description, subjects };
}

/**
 * Replays a batcher's events into frames, one per event plus the empty start. Pure: the same
 * events always give the same frames, so the view is a function of an index.
 */
export function buildTimeline(events: readonly CoreEvent[], settings: TimelineSettings): TimelineFrame[] {
  const arrivals = arrivalTimes(events);
  let state = startState(settings);
  const frames: TimelineFrame[] = [
    {
      index: 0,
      atMs: events[0]?.atMs ?? 0,
      queue: state.queue,
      running: state.running,
      event: undefined,
      description: START_DESCRIPTION,
      subjects: [],
      counts: state.counts,
    },
  ];
  for (const event of events) {
    const step = applyEvent(state, event, settings, arrivals);
    state = step.state;
    frames.push({
      index: frames.length,
      atMs: event.atMs,
      queue: state.queue,
      running: state.running,
      event,
      description: step.description,
      subjects: step.subjects,
      counts: state.counts,
    });
  }
  return frames;
}

const REJECTIONS: Record<string, string> = {
  queue_full: 'the queue is full → 429',
  closed: 'the batcher is closing → 503',
  over_sla: 'it could not meet its deadline → 429',
  circuit_open: 'the circuit breaker is open → 503',
};

const BREAKER_STATES = {
  open: 'the circuit breaker opens: the model keeps failing; waiting requests are answered 503 and new ones refused',
  half_open: 'the circuit breaker is half-open: one probe batch may run',
  closed: 'the circuit breaker closes: the probe passed',
} as const;

function describeFinish(id: string, outcome: OutcomeKind, endedIn: string, waited: string): string {
  switch (outcome) {
    case 'ok':
      return `${id} answered ok after ${waited}`;
    case 'timeout':
      return endedIn === 'queued'
        ? `${id} expires in the queue after ${waited} → 504; it never runs`
        : `${id} hits its deadline while running (${waited}) → 504; its result will be dropped`;
    case 'error':
      return `${id} fails with its batch after ${waited} → 500`;
    case 'cancelled':
      return `${id} is cancelled after ${waited} (its client went away)`;
    case 'shutdown':
      return `${id} is ended by the shutdown after ${waited} → 503`;
    case 'unavailable':
      return `${id} is answered at once as the breaker opens (after ${waited}) → 503`;
  }
}

function cloneCounts(counts: TimelineCounts): TimelineCounts {
  return { ...counts, outcomes: { ...counts.outcomes } };
}

/** A clock reading with fixed decimals, so the column does not jump: `   12.500 ms`. */
export function formatClockMs(ms: number): string {
  return `${ms.toFixed(3)} ms`;
}

/** The whole timeline as plain lines, for a pipe or a log: `12.500 ms  r3 arrives …`. */
export function formatTimelineText(frames: readonly TimelineFrame[]): string {
  const width = Math.max(0, ...frames.map((f) => formatClockMs(f.atMs).length));
  return frames
    .filter((f) => f.event !== undefined)
    .map((f) => `${formatClockMs(f.atMs).padStart(width)}  ${f.description}\n`)
    .join('');
}
