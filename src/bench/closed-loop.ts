import { Drain, DRAIN_SLACK_MS } from './drain.js';
import type { PlanShare } from './plan.js';
import type { BenchRecorder } from './recorder.js';
import { recordAnswer, recordFailure, TimedRequest, type RequestSink } from './timed-request.js';
import { createTransport } from './transport.js';

/**
 * Closed loop: connections × pipelining senders, each sending its next request as soon as its
 * last one ends, until --duration (or --requests) is used up, or `stop` aborts (the user's
 * Ctrl-C or `q`: no new sends, requests in flight are waited for as at a planned end). Latency
 * is from the actual send. `clock` returns ms since the run's start.
 */
export function runClosedLoop(
  share: PlanShare,
  recorder: BenchRecorder,
  clock: () => number,
  stop?: AbortSignal,
): Promise<void> {
  const { plan } = share;
  const transport = createTransport(plan, share.connections);
  const senders = share.connections * plan.pipelining;
  const warmupMs = plan.warmupMs;
  const endMs = share.maxRequests > 0 ? Number.POSITIVE_INFINITY : plan.warmupMs + plan.durationMs;
  let measuredSent = 0;
  let inFlight = 0;
  let drain: Drain | undefined;

  return new Promise<void>((resolve) => {
    const finish = (): void => {
      stop?.removeEventListener('abort', finish);
      if (drain !== undefined) return;
      if (stop?.aborted === true) recorder.endWindowAt(clock());
      drain = new Drain(transport, resolve);
      drain.begin(inFlight, plan.timeoutMs + DRAIN_SLACK_MS);
    };
    stop?.addEventListener('abort', finish);

    const sendNext = (sender: number): void => {
      if (drain !== undefined) {
        drain.settled(inFlight);
        return;
      }
      const now = clock();
      if (now >= endMs || (share.maxRequests > 0 && measuredSent >= share.maxRequests) || stop?.aborted === true) {
        // The first sender to see the end starts the drain; the others only report settling.
        finish();
        return;
      }
      const measured = now >= warmupMs;
      if (measured) measuredSent++;
      inFlight++;
      recorder.recordSend(0, measured, now);
      transport.send(new TimedRequest(sink, clock, now, measured, sender), sender);
    };

    const sink: RequestSink = {
      timeoutMs: plan.timeoutMs,
      complete(request, status, endAtMs) {
        inFlight--;
        recordAnswer(recorder, request, status, endAtMs);
        sendNext(request.sender);
      },
      fail(request, error, endAtMs) {
        inFlight--;
        recordFailure(recorder, request, error, endAtMs, drain);
        if (drain !== undefined) drain.settled(inFlight);
        // Deferred: a failure can be reported synchronously, and a refused port fails at once.
        else setImmediate(sendNext, request.sender);
      },
    };

    for (let sender = 0; sender < senders; sender++) sendNext(sender);
  });
}
