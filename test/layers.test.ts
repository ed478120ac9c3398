import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const srcDir = fileURLToPath(new URL('../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** The top folders of src/ that `file` imports from (static and lazy imports). */
function importedAreas(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((specifier) => relative(srcDir, join(file, '..', specifier)).split('/')[0]!);
}

/** What each area may not import: a contract two sides share lives below both. */
const FORBIDDEN: Record<string, string[]> = {
  'stats-contract': ['serve', 'ui', 'watch', 'report', 'bench', 'simulate', 'commands'],
  ui: ['serve'],
  watch: ['serve'],
  report: ['serve'],
};

describe('layers', () => {
  it.each(Object.entries(FORBIDDEN))('%s imports none of its forbidden areas', (area, forbidden) => {
    for (const file of sourceFiles(join(srcDir, area))) {
      const bad = importedAreas(file).filter((imported) => forbidden.includes(imported));
      expect(bad, relative(srcDir, file)).toEqual([]);
    }
  });
});
