import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.{ts,tsx}'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real servers; two cores do not gain from more forks.
    maxWorkers: 2,
  },
});
