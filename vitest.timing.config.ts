import { defineConfig } from 'vitest/config';

/**
 * The wall-clock-sensitive tests (`*.timing.test.ts`), run after the main suite with nothing
 * beside them, so that another test file's CPU does not show up in their measurements.
 */
export default defineConfig({
  test: {
    // With them, the package test, which would take a core from whatever ran beside it.
    include: ['test/**/*.timing.test.ts', 'test/package/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    env: { CI: 'false' },
  },
});
