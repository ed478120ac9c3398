/**
 * The shell blocks of every other guide in docs/ (bench, simulate, models, deploy, scaling, the
 * container, any guide added later, and the READMEs of examples/), run as a user would type them (test/docs/doc-runner.ts
 * says how, and how a guide marks a block that cannot run here: a container engine, a cluster,
 * a model of the reader's own). README.md, docs/learn.md and docs/protocols.md have test files of
 * their own, so that vitest runs them beside this one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-runner.js';
import { expectGuideRunsAsWritten } from './guide-as-written.js';
import { parseGuide } from './guide-blocks.js';

const OWN_TEST = new Set(['learn.md', 'protocols.md']);

/** docs/*.md, and the READMEs of examples/ that a user follows (examples/NAME/README.md). */
const candidates = [
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md') && !OWN_TEST.has(name))
    .map((name) => `docs/${name}`),
  ...readdirSync(join(ROOT, 'examples'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(ROOT, 'examples', entry.name, 'README.md')))
    .map((entry) => `examples/${entry.name}/README.md`),
];
const guides = candidates.filter((guide) => parseGuide(readFileSync(join(ROOT, guide), 'utf8')).length > 0);

describe('the guides in docs/, run as written', () => {
  it('finds the guides that hold commands', () => {
    expect(guides).toEqual(expect.arrayContaining(['docs/bench.md', 'docs/simulate.md', 'docs/scaling.md']));
  });

  it.each(guides)(
    '%s: every command exits as the guide says and prints what it quotes',
    async (guide) => {
      const ran = await expectGuideRunsAsWritten(guide);
      // A guide whose every block is marked skip says why for each; the rest must run something.
      const blocks = parseGuide(readFileSync(join(ROOT, guide), 'utf8'));
      if (blocks.some((block) => block.skip === undefined)) expect(ran).toBeGreaterThan(0);
    },
    600_000,
  );
});
