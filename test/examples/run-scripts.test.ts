/**
 * Every example runs as its README says: `bash examples/<name>/run.sh` starts what it needs on
 * free ports, runs the example end to end, stops everything and exits 0 when it worked. Runs
 * the built code (npm test builds first).
 */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');
const scripts = readdirSync(EXAMPLES).filter((name) => statSync(join(EXAMPLES, name)).isDirectory());

describe('the examples', () => {
  it('are the four the README promises, each with a README and a run.sh', () => {
    expect(scripts.sort()).toEqual(['dynamic-registration', 'image-classifier', 'library', 'quickstart']);
    for (const name of scripts) {
      expect(statSync(join(EXAMPLES, name, 'README.md')).isFile()).toBe(true);
      expect(statSync(join(EXAMPLES, name, 'run.sh')).isFile()).toBe(true);
    }
  });

  it.each(scripts)(
    'examples/%s/run.sh runs end to end and exits 0',
    async (name) => {
      // A script that exits non-zero is judged by what it printed: execFile's error names only its stderr.
      const { stdout } = await promisify(execFile)('bash', [join(EXAMPLES, name, 'run.sh')], {
        timeout: 120_000,
      }).catch((error: Error & { stdout?: string }) => {
        throw new Error(`${error.message}\n--- what it printed ---\n${error.stdout ?? ''}`);
      });
      expect(stdout).not.toMatch(/^FAIL/m);
      expect(stdout).toMatch(/stopped/);
    },
    150_000,
  );
});
