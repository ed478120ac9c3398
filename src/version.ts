import { readFileSync } from 'node:fs';

/** batchline's version, from its package.json (one level up from src/, two from dist/src/). */
function readVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'batchline' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // not there: try the next place
    }
  }
  return 'unknown';
}

export const BATCHLINE_VERSION = readVersion();
