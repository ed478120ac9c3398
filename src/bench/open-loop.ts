import { Drain, DRAIN_SLACK_MS } from './drain.js';
import type { PlanShare } from './plan.js';
import type { BenchRecorder } from './recorder.js';
import { OpenLoopSchedule } from './schedule.js';
import { Pacer } from './pacer.js';
import { recordAnswer, recordFailure, TimedRequest, type RequestSink } from './timed-request.js';
import { createTransport } from './transport.js';

/**
 * Until the pacer's thread runs (and should it fail), the loop polls with setImmediate below
 * this wait instead of arming a timer: Node's timers have millisecond granularity and would make
 * most sends ~1 ms late, which is the generator's error, not the server's.
 */
const SPIN_BELOW_MS = 2;
/**
 * Most sends in one turn of the event loop. A generator that has fallen behind must still read
 * responses between bursts, or it would push the rest of the schedule out without ever
 * timing an answer.
 */
const MAX_SENDS_PER_TURN = 256;

/**
 * Open loop (wrk2's "constant throughput"): sends follow a schedule fixed in advance, each
 * request timed from its intended send time, so a stalled server shows in the latency tail even
 * when the generator had to send late. Requests in flight are not capped except by
 * --max-in-flight; sends over it are refused and counted. Resolves when every request finished.
 * When `stop` aborts (the user's Ctrl-C or `q`), the rest of the schedule is dropped and the
 * requests in flight are waited for as at its planned end.
 *
 * `clock` returns ms since the run's start (intended times use the same origin).
 */
export function runOpenLoop(
  share: PlanShare,
  recorder: BenchRecorder,
  clock: () => number,
  stop?: AbortSignal,
): Promise<void> {
  const { plan } = share;
  const transport = createTransport(plan, share.connections);
  const schedule = new OpenLoopSchedule(plan, share.index, share.count, share.maxRequests);
  const warmupMs = plan.warmupMs;
  let inFlight = 0;
  let drain: Drain | undefined;

  return new Promise<void>((resolve) => {
    const sink: RequestSink = {
      timeoutMs: plan.timeoutMs,
      complete(request, status, endMs) {
        inFlight--;
        recordAnswer(recorder, request, status, endMs);
        drain?.settled(inFlight);
      },
      fail(request, error, endMs) {
        inFlight--;
        recordFailure(recorder, request, error, endMs, drain);
        drain?.settled(inFlight);
      },
    };

    let nextMs = schedule.next();
    let wakeUp: NodeJS.Timeout | NodeJS.Immediate | undefined;
    const cancelWakeUp = (): void => {
      if (wakeUp === undefined) return;
      clearTimeout(wakeUp as NodeJS.Timeout);
      clearImmediate(wakeUp as NodeJS.Immediate);
      wakeUp = undefined;
    };
    const finish = (): void => {
      stop?.removeEventListener('abort', finish);
      if (drain !== undefined) return;
      if (stop?.aborted === true) recorder.endWindowAt(clock());
      cancelWakeUp();
      pacer?.close();
      drain = new Drain(transport, resolve);
      drain.begin(inFlight, plan.timeoutMs + DRAIN_SLACK_MS);
    };
    stop?.addEventListener('abort', finish);

    const pump = (): void => {
      // Woken by the pacer while a fallback wake was still armed: one wake-up chain only.
      cancelWakeUp();
      if (stop?.aborted === true) return finish();
      let now = clock();
      let budget = MAX_SENDS_PER_TURN;
      while (nextMs !== undefined && nextMs <= now && budget-- > 0) {
        const measured = nextMs >= warmupMs;
        if (inFlight >= share.maxInFlight) {
          recorder.recordDropped(measured);
        } else {
          inFlight++;
          recorder.recordSend(now - nextMs, measured, now);
          transport.send(new TimedRequest(sink, clock, nextMs, measured), 0);
        }
        nextMs = schedule.next();
        now = clock();
      }
      if (nextMs === undefined) return finish();
      const waitMs = nextMs - now;
      if (budget < 0) wakeUp = setImmediate(pump);
      else if (pacer?.ready === true) pacer.wakeIn(waitMs);
      else if (waitMs > SPIN_BELOW_MS) wakeUp = setTimeout(pump, Math.floor(waitMs - 1));
      else wakeUp = setImmediate(pump);
    };
    const pacer = Pacer.start(pump);
    pump();
  });
}
