import { appendFileSync } from 'node:fs';

/**
 * One row of the reliability suite's table (attack, what batchline promises, what was observed),
 * written where `npm run test:reliability` collects them (BATCHLINE_RELIABILITY_TABLE); nothing
 * otherwise. scripts/reliability-table.ts prints them.
 */
export function tableRow(attack: string, expected: string, observed: string): void {
  const file = process.env.BATCHLINE_RELIABILITY_TABLE;
  if (file !== undefined && file !== '') appendFileSync(file, `${JSON.stringify({ attack, expected, observed })}\n`);
}
