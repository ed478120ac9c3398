/**
 * npm run test:reliability — the reliability suite (docs/reliability.md): every attack, the long
 * runs included, then the table of attack, what batchline promises, and what was observed. Each
 * test writes its row (test/reliability/table.ts); the exit code is vitest's.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'batchline-reliability-'));
const table = join(dir, 'table.jsonl');
const vitest = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    '--config',
    'vitest.reliability.config.ts',
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      BATCHLINE_RELIABILITY_TABLE: table,
      BATCHLINE_FUZZ_RUNS: process.env.BATCHLINE_FUZZ_RUNS ?? '2000',
    },
  },
);

let rows: { attack: string; expected: string; observed: string }[] = [];
try {
  rows = readFileSync(table, 'utf8')
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as (typeof rows)[number]);
} catch {
  // no test wrote a row
}
rmSync(dir, { recursive: true, force: true });
// Issue order (#1 … #16), then the suite's own attacks.
const order = (attack: string): number => Number(/^#(\d+)/.exec(attack)?.[1] ?? 100);
rows.sort((a, b) => order(a.attack) - order(b.attack));
console.log(`\nbatchline reliability suite: ${rows.length} attacks\n`);
console.log('| attack | expected | observed |');
console.log('|---|---|---|');
for (const row of rows) console.log(`| ${row.attack} | ${row.expected} | ${row.observed} |`);
process.exit(vitest.status ?? 1);
