// npm's `prepare` runs this first and builds only when it exits 1 (package.json).
// - `pack` and `publish`: `prepack` has just built from an empty dist/.
// - `exec`: `npx batchline` in a checkout links the checkout into npx's cache and runs its
//   `prepare` again; the `npm install` before it has built dist/ already, and a second full build
//   made the README's first start take 10 s (a minute on a busy machine) instead of one.
import { existsSync } from 'node:fs';

const command = process.env.npm_command;
const built = existsSync(new URL('../dist/src/cli.js', import.meta.url));
const skip = command === 'pack' || command === 'publish' || (command === 'exec' && built);
process.exit(skip ? 0 : 1);
