import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROFILE_OPTIONS } from '../../src/options/profile.js';
import type { OptionSchema } from '../../src/options/schema.js';
import { SIMULATE_OPTIONS } from '../../src/options/simulate.js';

const doc = readFileSync(new URL('../../docs/simulate.md', import.meta.url), 'utf8');

/**
 * A default as a user types it: a duration in its units (`--serve-duration` held 3000 ms and the
 * table said `3000` beside "bare = s", which reads as 3000 seconds).
 */
function defaultText(spec: OptionSchema[string]): string {
  if (spec.kind !== 'duration') return String(spec.default);
  const ms = spec.default as number;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function checkTable(marker: string, schema: OptionSchema): void {
  const table = doc.slice(doc.indexOf(`<!-- ${marker}:start -->`), doc.indexOf(`<!-- ${marker}:end -->`));
  const rows = table.split('\n').filter((line) => line.startsWith('| `--'));
  expect(rows).toHaveLength(Object.keys(schema).length);
  for (const spec of Object.values(schema)) {
    const row = rows.find((line) => line.startsWith(`| \`--${spec.flag}\` |`));
    expect(row, `--${spec.flag} is missing from docs/simulate.md`).toBeDefined();
    expect(row).toContain(spec.env === undefined ? '| — |' : `\`${spec.env}\``);
    expect(row).toContain(spec.default === undefined ? '| — |' : `\`${defaultText(spec)}\``);
    expect(row).toContain(spec.description);
    if (spec.kind === 'int' || spec.kind === 'number') expect(row).toContain(`${spec.min}–${spec.max}`);
  }
}

describe('docs/simulate.md option tables', () => {
  it('list every simulate option with its default, range and description', () =>
    checkTable('simulate-options', SIMULATE_OPTIONS));
  it('list every profile option with its default, range and description', () =>
    checkTable('profile-options', PROFILE_OPTIONS));
});
