import { defineConfig } from 'vitest/config';

/**
 * `npm run test:reliability`: every attack of the reliability suite (docs/reliability.md), the
 * quick ones `npm test` runs too and the long ones (`*.slow.test.ts`), one file at a time so
 * that the load of one does not starve another.
 */
export default defineConfig({
  test: {
    include: [
      'test/reliability/**/*.test.ts',
      'test/watch/hostile-server.test.ts',
      'test/serve/event-loop-lag.test.ts',
    ],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    env: { CI: 'false' },
  },
});
