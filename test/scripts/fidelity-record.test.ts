import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadRecord, RECORD_FORMAT } from '../../scripts/lib/fidelity-record.js';
import { validateLatencyProfile } from '../../src/profile/latency-profile.js';
import { tempDir } from '../temp-dir.js';

const RECORDS = fileURLToPath(new URL('../../docs/lab/fidelity/', import.meta.url));

describe('bench:fidelity records (docs/lab/fidelity)', () => {
  const files = readdirSync(RECORDS).filter((name) => name.endsWith('.json'));

  it('are there to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s holds a profile simulate takes and real figures for every level', (name) => {
    const record = loadRecord(join(RECORDS, name));
    expect(() => validateLatencyProfile(record.profile, name)).not.toThrow();
    for (const recorded of record.cases) {
      expect(recorded.capacity.goodput_rps).toBeGreaterThan(0);
      // 50, 80 and 95 % of the predicted capacity, or the rates FIDELITY_RATES gave: rising.
      const loads = recorded.levels.map((level) => level.load);
      expect(loads.length).toBeGreaterThan(0);
      expect(loads.every((load, i) => load > 0 && (i === 0 || load > (loads[i - 1] as number)))).toBe(true);
      for (const level of recorded.levels) {
        expect(level.rate_rps).toBeGreaterThan(0);
        expect(level.p50_ms).toBeLessThanOrEqual(level.p99_ms);
        expect(level.p99_range_ms[0]).toBeLessThanOrEqual(level.p99_range_ms[1]);
      }
    }
  });

  it('refuses a file that is not a record, naming the format it expected', () => {
    const path = join(tempDir('batchline-record-'), 'other.json');
    writeFileSync(path, JSON.stringify({ format: 'batchline-latency-profile/1' }));
    expect(() => loadRecord(path)).toThrow(RECORD_FORMAT);
  });
});
