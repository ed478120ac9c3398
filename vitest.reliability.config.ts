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
      // Attacks on a part, tested beside it (issue 25): hostile payloads, the admin API, bench's
      // own hygiene, simulate's and profile's inputs, the timers simulate models.
      'test/protocol/msgpack.test.ts',
      'test/serve/oip.test.ts',
      'test/serve/admin.test.ts',
      'test/bench/probe.test.ts',
      'test/bench/protocol-errors.test.ts',
      'test/simulate/command.test.ts',
      'test/profile/profile.test.ts',
      'test/simulate/timer-lateness.test.ts',
    ],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    env: { CI: 'false' },
  },
});
