import * as hdr from 'hdr-histogram-js';
import { addEncoded } from './histogram-codec.js';
import { LOG_INTERVAL_MS, type EncodedInterval } from './recorder.js';
import { createLatencyHistogram } from '../core/latency-histogram.js';

/**
 * The HdrHistogram interval log (the .hlog format HdrHistogram's HistogramLogProcessor and
 * hdr-histogram-js's HistogramLogReader read): one line per second of latency (untagged) and of
 * service time (tagged `service`), values in µs, max column in ms. Threads' intervals with the
 * same index are added first.
 */
export function formatHdrLog(threads: readonly EncodedInterval[][], startEpochMs: number, comment: string): string {
  const byIndex = new Map<number, EncodedInterval[]>();
  for (const intervals of threads) {
    for (const interval of intervals) {
      const list = byIndex.get(interval.index) ?? [];
      list.push(interval);
      byIndex.set(interval.index, list);
    }
  }
  let text = '';
  const writer = new hdr.HistogramLogWriter((chunk) => {
    text += chunk;
  });
  writer.outputComment(comment);
  writer.outputLogFormatVersion();
  writer.outputStartTime(startEpochMs);
  writer.outputLegend();
  const latency = createLatencyHistogram();
  const service = createLatencyHistogram();
  for (const index of [...byIndex.keys()].sort((a, b) => a - b)) {
    latency.reset();
    service.reset();
    for (const interval of byIndex.get(index) as EncodedInterval[]) {
      addEncoded(latency, interval.latency);
      addEncoded(service, interval.service);
    }
    // A second in which requests only failed has no latency to log.
    if (latency.totalCount === 0) continue;
    const startS = (index * LOG_INTERVAL_MS) / 1000;
    const endS = startS + LOG_INTERVAL_MS / 1000;
    latency.tag = '';
    writer.outputIntervalHistogram(latency, startS, endS, 1000);
    service.tag = 'service';
    writer.outputIntervalHistogram(service, startS, endS, 1000);
  }
  latency.destroy();
  service.destroy();
  return text;
}
