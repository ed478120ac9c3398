import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root, staticImports } from '../../static-imports.js';

/** What only an --html report may load: the report code, the plotting library, the bundler. */
function htmlModules(reached: Set<string>): string[] {
  return [...reached].filter(
    (m) =>
      ['esbuild', 'uplot', 'puppeteer-core'].includes(m) ||
      (m.includes('/src/report/html/') && !m.endsWith('/command-line.ts')),
  );
}

describe('the HTML report loads only with --html', () => {
  for (const entry of [
    'src/cli.ts',
    'src/commands/bench.ts',
    'src/commands/simulate.ts',
    'src/commands/bench-main.ts',
    'src/commands/simulate-main.ts',
    'src/commands/compare-main.ts',
  ]) {
    it(`${entry} reaches no report page code, uPlot or esbuild without it`, () => {
      expect(htmlModules(staticImports(resolve(root, entry)))).toEqual([]);
    });
  }

  it('the simulate page does reach its code (the scan sees it)', () => {
    expect(htmlModules(staticImports(resolve(root, 'src/report/html/simulate-html.ts'))).length).toBeGreaterThan(3);
  });
});
