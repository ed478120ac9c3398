import type { OptionSchema } from './schema.js';
import { SERVER_ACCESS_OPTIONS } from './server-access.js';

/** Options of `batchline watch` (architecture.md rule 7); keys are commander's names of the flags, durations resolve to ms. */
export const WATCH_OPTIONS = {
  ...SERVER_ACCESS_OPTIONS,
  interval: {
    kind: 'duration',
    flag: 'interval',
    default: 500,
    minMs: 50,
    maxMs: 600_000,
    bareUnit: 'ms',
    description: 'time between two reads of the stats',
  },
  timeout: {
    kind: 'duration',
    flag: 'timeout',
    default: 2000,
    minMs: 10,
    maxMs: 600_000,
    bareUnit: 'ms',
    description: 'a read slower than this counts as a failure',
  },
  ui: {
    kind: 'boolean',
    flag: 'ui',
    negatable: true,
    default: true,
    description: 'plain log lines instead of the dashboard (also off a terminal and with CI=true)',
  },
} as const satisfies OptionSchema;
