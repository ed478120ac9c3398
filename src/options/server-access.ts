import type { OptionSchema } from './schema.js';

/**
 * How a client command reaches a server behind a gateway: headers its every request sends (an
 * `authorization`, a `host`; parsed by header-lines.ts) and whether an `https://` certificate
 * that does not verify is trusted. One definition, spread into bench's and watch's options, so
 * that their helps say the same.
 */
export const SERVER_ACCESS_OPTIONS = {
  header: {
    kind: 'list',
    flag: 'header',
    short: 'H',
    default: [],
    placeholder: 'name: value',
    description:
      "header every request to the server sends, repeatable, as curl's and wrk's -H (-H 'authorization: Bearer x' for a server behind a gateway)",
  },
  insecure: {
    kind: 'boolean',
    flag: 'insecure',
    default: false,
    description:
      "https://: trust a server whose certificate does not verify (self-signed, expired, another host's), as curl -k and k6's --insecure-skip-tls-verify; wrk and hey never check",
  },
} as const satisfies OptionSchema;
