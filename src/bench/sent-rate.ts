import type { BenchResult } from './result.js';

/**
 * Sends handed to a connection per second of the window (`requests.sent`'s rate): the scheduled
 * rate (`sendRateRps`, which counts the sends --max-in-flight refused too) less the refused share.
 * Taken from the scheduled rate, not from `sent / durationS`, so that it holds for merged runs,
 * whose rates add up over windows of their own.
 */
export function sentRateRpsOf(result: BenchResult): number {
  const { sent, dropped } = result.requests;
  const scheduled = sent + dropped;
  return scheduled === 0 ? 0 : (result.sendRateRps * sent) / scheduled;
}
