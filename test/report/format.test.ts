import { describe, expect, it } from 'vitest';
import { formatCount, formatDurationS, formatMs, formatPercent, formatRate } from '../../src/report/format.js';
import { formatStatsLine } from '../../src/report/stats-line.js';
import { busyStats, emptyStats } from '../ui/fixtures.js';

describe('format', () => {
  it('writes durations with three significant digits and a unit', () => {
    expect([0, 0.4123, 1, 12.34, 456.7, 999.9, 1000, 1250, 59_999, 125_000, 3_725_000].map(formatMs)).toEqual([
      '0 ms',
      '0.412 ms',
      '1 ms',
      '12.3 ms',
      '457 ms',
      '1 s',
      '1 s',
      '1.25 s',
      '60 s',
      '2m05s',
      '1h02m',
    ]);
    expect(formatMs(Number.NaN)).toBe('-');
    expect([0, 12, 185, 3725].map(formatDurationS)).toEqual(['0s', '12s', '3m05s', '1h02m']);
  });

  it('writes counts, rates and shares', () => {
    expect([0, 12, 12_345, 1_234_567, 2.5e9].map(formatCount)).toEqual(['0', '12', '12,345', '1.23M', '2.5G']);
    expect([0, 0.5, 12.34, 99.5, 1234.4, 12_345, 2_500_000].map(formatRate)).toEqual([
      '0/s',
      '0.5/s',
      '12.3/s',
      '99.5/s',
      '1,234/s',
      '12.3k/s',
      '2.5M/s',
    ]);
    expect([0, 0.0004, 0.004, 0.25, 1].map(formatPercent)).toEqual(['0%', '<0.1%', '0.4%', '25%', '100%']);
  });
});

describe('formatStatsLine', () => {
  it('sums up a server in one plain line', () => {
    expect(formatStatsLine(busyStats(), { throughputPerS: 2000, batchesPerS: 250 })).toBe(
      'ready up 3m12s queue 12/128 running 8+5 ok 2,000/s batches 250/s p50 31.2 ms p99 44.7 ms 200=38,000 429=0 504=0 5xx=0 4xx=3',
    );
    expect(formatStatsLine(emptyStats())).toBe('ready up 2s queue 0/128 running 0 p50 - p99 - 200=0 429=0 504=0 5xx=0');
  });
});
