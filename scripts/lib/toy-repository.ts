import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildToyModelOnnx } from '../../src/model/toy-model.js';

/**
 * A model repository in Triton's layout holding the toy model as `name/<version>/model.onnx` for
 * each of `versions`, readable by any user (a container's `node` user reads it through a mount).
 */
export function writeToyRepository(name: string, versions: number[], prefix = 'batchline-repository-'): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(root, 0o755);
  for (const version of versions) {
    mkdirSync(join(root, name, String(version)), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, name, String(version), 'model.onnx'), buildToyModelOnnx(), { mode: 0o644 });
  }
  return root;
}
