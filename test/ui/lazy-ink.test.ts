import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Every module reached from `entry` through static imports (dynamic `import()` is lazy and not followed). */
function staticImports(entry: string, seen = new Set<string>()): Set<string> {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  if (!entry.startsWith('/')) return seen; // a package
  const source = readFileSync(entry, 'utf8');
  for (const match of source.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
    const specifier = match[1] as string;
    if (/^import\s+type\s/.test(match[0]) || /^export\s+type\s/.test(match[0])) continue;
    if (specifier.startsWith('.')) {
      const base = resolve(dirname(entry), specifier).replace(/\.js$/, '');
      const file = [`${base}.ts`, `${base}.tsx`].find((candidate) => {
        try {
          readFileSync(candidate);
          return true;
        } catch {
          return false;
        }
      });
      if (file !== undefined) staticImports(file, seen);
    } else {
      seen.add(specifier);
    }
  }
  return seen;
}

describe('Ink is loaded only for a dashboard (architecture.md rule 6)', () => {
  for (const entry of ['src/cli.ts', 'src/commands/watch.ts', 'src/watch/watch-plain.ts', 'src/report/stats-line.ts', 'src/ui/terminal.ts', 'src/ui/timeline-model.ts']) {
    it(`${entry} does not import ink or react`, () => {
      const reached = staticImports(resolve(root, entry));
      // A .tsx module imports react/jsx-runtime implicitly, so none may be reached either.
      expect([...reached].filter((m) => m === 'ink' || m === 'react' || m.startsWith('react/') || m.endsWith('.tsx'))).toEqual([]);
    });
  }

  it('the dashboards do import ink (the scan sees imports at all)', () => {
    expect(staticImports(resolve(root, 'src/ui/serve-dashboard.ts')).has('ink')).toBe(true);
  });
});
