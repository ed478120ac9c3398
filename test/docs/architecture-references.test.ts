/**
 * The project's own account of its design is docs/architecture.md: code and docs cite its
 * numbered house rules and sections, never notes that users do not have.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const PLACES = ['src', 'docs', 'scripts', 'test', 'examples', 'bin', 'README.md'];

function filesUnder(path: string): string[] {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path).flatMap((name) => filesUnder(join(path, name)));
}

const files = PLACES.flatMap((place) => filesUnder(join(ROOT, place))).filter((file) =>
  /\.(ts|tsx|js|md|json|ya?ml)$/.test(file),
);
const architecture = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
const ruleNumbers = new Set([...architecture.matchAll(/^(\d+)\. \*\*/gm)].map((match) => Number(match[1])));
const headings = [...architecture.matchAll(/^#+ (.+)$/gm)].map((match) => match[1] ?? '');
/** A heading is cited by its words, without a parenthesised aside ("Batching semantics"). */
const hasHeading = (name: string) => headings.some((h) => h === name || h.startsWith(`${name} (`));

describe('references to the design', () => {
  it('name no workshop notes (the design file of the workshop, or its shared folder)', () => {
    const workshop = new RegExp(['DESIGN', '\\.md|\\.\\./shared/'].join(''));
    const offenders = files.filter((file) => workshop.test(readFileSync(file, 'utf8')));
    expect(offenders.map((file) => relative(ROOT, file))).toEqual([]);
  });

  it('cite house rules and sections that docs/architecture.md has', () => {
    expect(ruleNumbers.size).toBeGreaterThanOrEqual(10);
    const missing: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8').replace(/\s*\n\s*(\*|\/\/)?\s*/g, ' ');
      for (const match of text.matchAll(/architecture\.md\)? rules? (\d+)(?: and (\d+))?/g)) {
        for (const n of [match[1], match[2]].filter(Boolean).map(Number)) {
          if (!ruleNumbers.has(n)) missing.push(`${relative(ROOT, file)}: rule ${n}`);
        }
      }
      for (const match of text.matchAll(/rule (\d+) of architecture\.md/g)) {
        if (!ruleNumbers.has(Number(match[1]))) missing.push(`${relative(ROOT, file)}: rule ${match[1]}`);
      }
      for (const match of text.matchAll(/architecture\.md,? "([^"]+)"/g)) {
        if (!hasHeading(match[1] ?? '')) missing.push(`${relative(ROOT, file)}: "${match[1]}"`);
      }
      for (const match of text.matchAll(/"([^"]+)" in architecture\.md/g)) {
        if (!hasHeading(match[1] ?? '')) missing.push(`${relative(ROOT, file)}: "${match[1]}"`);
      }
    }
    expect(missing).toEqual([]);
  });
});
