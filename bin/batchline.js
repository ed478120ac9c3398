#!/usr/bin/env node
// The CLI is written in TypeScript and built to dist/ on install (npm's `prepare`).
// Node opens its unauthenticated inspector on 127.0.0.1:9229 on SIGUSR1 unless the process
// listens for the signal: as early as possible, so that no command ever exposes it (use
// `node --inspect` to debug). `serve` logs it as ignored (src/serve/signals.ts).
process.on('SIGUSR1', () => {});
const { main } = await import('../dist/src/cli.js');
main(process.argv);
