/** Largest latency a histogram tracks: one hour, in microseconds (the smallest is 1 µs). */
export const HISTOGRAM_MAX_US = 3_600_000_000;
