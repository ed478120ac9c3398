import { statSync } from 'node:fs';
import { BatchlineError } from '../errors.js';
import type { InstanceLauncher } from './instance-handle.js';

/**
 * Every instance of a version runs the file the version was loaded from. An instance that is
 * restarted (a crash, a stuck batch, a killed process) reads its model file again: replaced in
 * place since (a deploy that copies the next model over the old one), the restart would serve
 * another model, or other weights, under the version's name and input specs. PaddleOCR's
 * classifier restarted from the detector's file was `up again`, /readyz 200, and failed every
 * batch it was given until the version's circuit breaker opened. Such a restart fails instead,
 * saying why; the version's other instances go on serving the file they loaded.
 */
export function launchesFromLoadedFile(launcher: InstanceLauncher, path: string | undefined): InstanceLauncher {
  const loaded = path === undefined ? undefined : identityOf(path);
  if (path === undefined || loaded === undefined) return launcher;
  return (onExit, index, loadSignal) => {
    const now = identityOf(path);
    // A file that is gone fails the load with its own message (ENOENT).
    if (now !== undefined && now !== loaded)
      return Promise.reject(
        new BatchlineError(
          'MODEL_LOAD_FAILED',
          `${path} was replaced or modified since this version loaded it, and a restart would serve the new file under the old version: register it as a new version (or restart the server)`,
        ),
      );
    return launcher(onExit, index, loadSignal);
  };
}

/** What changes when a file is replaced (a rename over it: its inode) or written (its size, its time). */
function identityOf(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return undefined;
  }
}
