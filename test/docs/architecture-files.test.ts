/**
 * docs/architecture.md names the files it describes: each name must be a file of the tree, and
 * its table of the core must name every file of src/core, which has no other guide, and no other.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const architecture = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const sourceNames = new Set(filesUnder(join(ROOT, 'src')).map((file) => basename(file)));

/** A cited TypeScript file exists: a path from the root or from src/, or a name under src/. */
function exists(cited: string): boolean {
  if (!cited.includes('/')) return sourceNames.has(cited);
  return [join(ROOT, cited), join(ROOT, 'src', cited)].some(existsSync);
}

describe('docs/architecture.md', () => {
  it('names only TypeScript files that exist', () => {
    const cited = [...architecture.matchAll(/`([\w./-]+\.tsx?)`/g)].map((match) => match[1] ?? '');
    expect(cited.length).toBeGreaterThan(100);
    expect(cited.filter((name) => !name.endsWith('.d.ts') && !exists(name))).toEqual([]);
  });

  it("names every file of src/core in the core's table, and only those", () => {
    const table = /## The core \(`src\/core`\)\n([\s\S]*?)\n## /.exec(architecture)?.[1] ?? '';
    const named = new Set([...table.matchAll(/`([\w-]+\.ts)`/g)].map((match) => match[1] ?? ''));
    const core = readdirSync(join(ROOT, 'src', 'core')).filter((name) => name.endsWith('.ts'));
    expect(core.filter((name) => !named.has(name))).toEqual([]);
    expect([...named].filter((name) => !core.includes(name))).toEqual([]);
  });
});
