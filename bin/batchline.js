#!/usr/bin/env node
// The CLI is written in TypeScript and built to dist/ on install (npm's `prepare`).
import { pinTickObjectShape } from '../dist/src/pin-tick-shape.js';

// Before anything else runs: see pin-tick-shape.ts (keeps process.nextTick on V8's fast path).
pinTickObjectShape();
const { main } = await import('../dist/src/cli.js');
main(process.argv);
