import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root, staticImports } from '../static-imports.js';

describe('Ink is loaded only for a dashboard (architecture.md rule 6)', () => {
  for (const entry of [
    'src/cli.ts',
    'src/commands/watch.ts',
    'src/watch/watch-plain.ts',
    'src/report/stats-line.ts',
    'src/ui/terminal.ts',
    'src/report/timeline-model.ts',
  ]) {
    it(`${entry} does not import ink or react`, () => {
      const reached = staticImports(resolve(root, entry));
      // A .tsx module imports react/jsx-runtime implicitly, so none may be reached either.
      expect(
        [...reached].filter((m) => m === 'ink' || m === 'react' || m.startsWith('react/') || m.endsWith('.tsx')),
      ).toEqual([]);
    });
  }

  it('the dashboards do import ink (the scan sees imports at all)', () => {
    expect(staticImports(resolve(root, 'src/ui/serve-dashboard.ts')).has('ink')).toBe(true);
  });
});
