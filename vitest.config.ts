import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that run the guides' commands (test/docs/*-commands.test.ts) take the longest, and
 * start first, as vitest's cache of durations orders them on a second run. On a fresh clone, with
 * no cache, vitest starts the largest files first, and these small ones would start last and end
 * the run alone on one core.
 */
class GuidesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const guide = (file: TestSpecification): boolean => /test\/docs\/[\w-]+-commands\.test\.ts$/.test(file.moduleId);
    return [...sorted.filter(guide), ...sorted.filter((file) => !guide(file))];
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.{ts,tsx}'],
    // Wall-clock-sensitive tests run on their own afterwards (vitest.timing.config.ts).
    // The package test (test/package) packs and installs the project, a minute of CPU that would
    // skew the timing of tests beside it: it runs alone too, with the timing tests.
    // The reliability suite's long runs (`*.slow.test.ts`) are `npm run test:reliability`'s.
    exclude: ['test/**/*.timing.test.ts', 'test/**/*.slow.test.ts', 'test/package/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real servers; two cores do not gain from more forks.
    maxWorkers: 2,
    sequence: { sequencer: GuidesFirst },
    // Ink draws only the last frame when it believes it runs in CI (is-in-ci reads CI at import);
    // the dashboard tests read every frame. Tests that check CI behaviour pass their own env.
    env: { CI: 'false' },
  },
});
