#!/usr/bin/env node
// The CLI is written in TypeScript and built to dist/ on install (npm's `prepare`).
import { main } from '../dist/src/cli.js';

main(process.argv);
