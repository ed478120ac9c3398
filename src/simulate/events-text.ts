import type { CoreEvent } from '../core/event-log.js';

/**
 * The event timeline as plain text, one event a line in the order the core produced them:
 * what `simulate --events` prints, the step-through timeline as a script can read it.
 */
export function formatEvents(events: readonly CoreEvent[]): string {
  const lines = events.map((event) => `${time(event.atMs)}  ${describe(event)}`);
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

function describe(event: CoreEvent): string {
  switch (event.kind) {
    case 'admitted':
      return `admitted        req ${event.requestId}  (queue ${event.queueDepth})`;
    case 'rejected':
      return `rejected        req ${event.requestId}  ${event.reason}  (queue ${event.queueDepth})`;
    case 'batch_started':
      return `batch started   #${event.batchId} on instance ${event.instance}, ${event.requestIds.length} request${event.requestIds.length === 1 ? '' : 's'} [${event.requestIds.join(' ')}] (${event.trigger})  (queue ${event.queueDepth}, limit ${event.limit}, window ${round3(event.windowMs)} ms)`;
    case 'isolation_run':
      return `isolation run   #${event.batchId} on instance ${event.instance}, [${event.requestIds.join(' ')}] from ${time(event.startedAtMs).trim()}${event.failed ? ' FAILED' : ' passed'}`;
    case 'breaker':
      return `breaker         ${event.state.replace('_', '-')}`;
    case 'batch_finished':
      return `batch finished  #${event.batchId} on instance ${event.instance}${event.failed ? ' FAILED' : ''}`;
    case 'request_finished': {
      const batch = event.batchId === undefined ? '' : ` in batch #${event.batchId}`;
      if (event.outcome === 'ok') return `completed       req ${event.requestId}${batch}`;
      if (event.outcome === 'timeout') return `expired         req ${event.requestId} while ${event.endedIn}${batch}`;
      return `${event.outcome.padEnd(15)} req ${event.requestId}${batch}`;
    }
  }
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function time(ms: number): string {
  return `${ms.toFixed(3).padStart(12)} ms`;
}
