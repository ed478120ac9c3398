import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { BatchlineError } from '../errors.js';
import type { InstanceLauncher } from './instance-handle.js';

/**
 * Every instance of a version runs the file the version was loaded from. An instance that is
 * restarted (a crash, a stuck batch, a killed process) reads its model file again: replaced in
 * place since (a deploy that copies the next model over the old one), the restart would serve
 * another model, or other weights, under the version's name and input specs. PaddleOCR's
 * classifier restarted from the detector's file was `up again`, /readyz 200, and failed every
 * batch it was given until the version's circuit breaker opened. Such a restart fails instead,
 * saying why; the version's other instances go on serving the file they loaded. "Replaced" is
 * by content: a file touched, or copied over with the same bytes, restarts as before.
 */
export function launchesFromLoadedFile(launcher: InstanceLauncher, path: string | undefined): InstanceLauncher {
  const loaded = path === undefined ? undefined : identityOf(path);
  if (path === undefined || loaded === undefined) return launcher;
  let loadedStat = loaded.stat;
  return (onExit, index, loadSignal) => {
    const now = statOf(path);
    // A file that is gone fails the load with its own message (ENOENT). One whose stat changed is
    // read again: touched, or copied over with the same bytes (rsync, git-sync, a redeploy of the
    // same model), it is the same model, and refusing its restart left the version without instances.
    if (now !== undefined && now !== loadedStat) {
      if (hashOrUndefined(path) !== loaded.sha256)
        return Promise.reject(
          new BatchlineError(
            'MODEL_LOAD_FAILED',
            `${path} was replaced or modified since this version loaded it, and a restart would serve the new file under the old version: register it as a new version (or restart the server)`,
          ),
        );
      loadedStat = now;
    }
    return launcher(onExit, index, loadSignal);
  };
}

/** A file's bytes (their SHA-256) and what changes when it is replaced or written (its stat). */
function identityOf(path: string): { stat: string; sha256: string } | undefined {
  const stat = statOf(path);
  if (stat === undefined) return undefined;
  try {
    return { stat, sha256: contentHashOf(path) };
  } catch {
    return undefined;
  }
}

/** What changes when a file is replaced (a rename over it: its inode) or written (its size, its time). */
function statOf(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/** The file's hash, or undefined when it cannot be read (the launch then fails with its own message). */
function hashOrUndefined(path: string): string | undefined {
  try {
    return contentHashOf(path);
  } catch {
    return undefined;
  }
}

/** SHA-256 of a file's bytes, read a MiB at a time (a model may be gigabytes). */
function contentHashOf(path: string): string {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(1 << 20);
  const fd = openSync(path, 'r');
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) hash.update(chunk.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}
