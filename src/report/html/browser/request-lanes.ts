import type { CoreEvent } from '../../../core/event-log.js';

/** One request's life, with the index of the event at which each part happened. */
export interface Lane {
  id: string;
  arrivalMs: number;
  arrivalEvent: number;
  rejected?: string;
  startMs?: number;
  startEvent?: number;
  batchId?: number;
  endMs?: number;
  endEvent?: number;
  outcome?: string;
  endedIn?: string;
}

/** Every request of a run in arrival order, and where each one is in that order. */
export interface Lanes {
  lanes: Lane[];
  indexOf: Map<string, number>;
}

/** Reads the requests' lives out of the events, once per run. */
export function lanesOf(events: readonly CoreEvent[]): Lanes {
  const lanes: Lane[] = [];
  const indexOf = new Map<string, number>();
  const lane = (id: string): Lane | undefined => {
    const index = indexOf.get(id);
    return index === undefined ? undefined : lanes[index];
  };
  events.forEach((event, i) => {
    switch (event.kind) {
      case 'admitted':
      case 'rejected':
        indexOf.set(event.requestId, lanes.length);
        lanes.push({
          id: event.requestId,
          arrivalMs: event.atMs,
          arrivalEvent: i,
          ...(event.kind === 'rejected' ? { rejected: event.reason } : {}),
        });
        break;
      case 'batch_started':
        for (const id of event.requestIds) {
          const l = lane(id);
          if (l !== undefined) Object.assign(l, { startMs: event.atMs, startEvent: i, batchId: event.batchId });
        }
        break;
      case 'request_finished': {
        const l = lane(event.requestId);
        if (l !== undefined)
          Object.assign(l, { endMs: event.atMs, endEvent: i, outcome: event.outcome, endedIn: event.endedIn });
        break;
      }
      case 'batch_finished':
        break;
    }
  });
  return { lanes, indexOf };
}
