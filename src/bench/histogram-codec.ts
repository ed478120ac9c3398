import * as hdr from 'hdr-histogram-js';
import { createLatencyHistogram } from '../core/latency-histogram.js';

/**
 * Histograms travel between worker threads and into JSON reports as HdrHistogram's compressed
 * base64 encoding, then are added into a fresh histogram of the standard range.
 */
export function encodeHistogram(histogram: hdr.Histogram): string {
  return hdr.encodeIntoCompressedBase64(histogram);
}

/** Decodes `encoded` and adds it into `into` (same units: integer µs). */
export function addEncoded(into: hdr.Histogram, encoded: string): void {
  const decoded = hdr.decodeFromCompressedBase64(encoded, 64, false);
  into.add(decoded);
  decoded.destroy();
}

/** A standard latency histogram holding the sum of every encoded one. */
export function mergeEncoded(encoded: readonly string[]): hdr.Histogram {
  const merged = createLatencyHistogram();
  for (const one of encoded) addEncoded(merged, one);
  return merged;
}
