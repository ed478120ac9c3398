import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every module reached from `entry` through static imports (dynamic `import()` is lazy and not followed). */
export function staticImports(entry: string, seen = new Set<string>()): Set<string> {
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
