/**
 * docs/library.md, and the README's "Use it as a library", as a user reads them: each complete
 * example (a ```js block that imports 'batchline') runs against the built package and prints what
 * its comments say, and the options
 * table names every batching option with the default the schema gives it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BATCHING_OPTIONS } from '../../src/options/batching.js';

const ROOT = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8');
const LIBRARY = new URL('../../dist/src/index.js', import.meta.url).href;
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const readmeSection = readme.slice(readme.indexOf('## Use it as a library'), readme.indexOf('## Performance'));
const completeExamples = (markdown: string): string[] =>
  [...markdown.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => /^import /m.test(code));
const examples = [...completeExamples(doc), ...completeExamples(readmeSection)];

describe('docs/library.md and the README\'s "Use it as a library"', () => {
  it("has the README's example", () => expect(completeExamples(readmeSection)).toHaveLength(1));

  it('has complete examples', () => expect(examples.length).toBeGreaterThanOrEqual(2));

  it.each(examples.map((code, i) => [i + 1, code]))(
    'example %d runs and prints what its comments say',
    async (_n, code) => {
      const expected = [...code.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]);
      const source = code.replaceAll("from 'batchline'", `from ${JSON.stringify(LIBRARY)}`);
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '--eval', source], {
        timeout: 30_000,
      });
      expect(stdout.trim().split('\n')).toEqual(expected);
    },
  );

  it("maps every method and option of dataloader's own declarations in its 'Coming from dataloader' table", () => {
    const declarations = readFileSync(join(ROOT, 'node_modules', 'dataloader', 'index.d.ts'), 'utf8');
    const loader = declarations.slice(
      declarations.indexOf('declare class DataLoader'),
      declarations.indexOf('declare namespace'),
    );
    const methods = [...loader.matchAll(/^ {2}(\w+)[(:]/gm)].map((m) => m[1]!).filter((name) => name !== 'constructor');
    const options = declarations.slice(declarations.indexOf('export type Options'));
    const optionNames = [...options.slice(0, options.indexOf('};')).matchAll(/^ {4}(\w+)\?:/gm)].map((m) => m[1]!);
    expect(methods).toEqual(expect.arrayContaining(['load', 'loadMany', 'prime', 'clear', 'clearAll']));
    expect(optionNames).toEqual(expect.arrayContaining(['maxBatchSize', 'batchScheduleFn', 'cacheKeyFn']));
    expect(doc).toContain('\n### Coming from dataloader\n');
    const section = doc.slice(doc.indexOf('\n### Coming from dataloader\n') + 1);
    const firstColumn = section
      .slice(0, section.indexOf('\n### '))
      .split('\n')
      .filter((line) => line.startsWith('| '))
      .map((line) => line.split('|')[1]!)
      .join(' ');
    for (const name of [...methods, ...optionNames]) expect(firstColumn, name).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it('lists every batching option with its default', () => {
    for (const [key, spec] of Object.entries(BATCHING_OPTIONS)) {
      const row = doc.split('\n').find((line) => line.startsWith('|') && line.includes(`\`${key}\``));
      expect(row, key).toBeDefined();
      const defaults = row!.split('|')[2]!;
      expect(defaults, key).toContain(spec.default === undefined ? 'none' : String(spec.default));
    }
  });
});
