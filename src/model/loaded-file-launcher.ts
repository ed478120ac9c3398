import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
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
  const loadedStat = path === undefined ? undefined : statOf(path);
  if (path === undefined || loadedStat === undefined) return launcher;
  // Its bytes' hash, read beside the load and not on the event loop's back (a model may be
  // gigabytes): known only if the file did not change while it was read.
  const loadedHash = contentHashOf(path).then(
    (hash) => (statOf(path) === loadedStat ? hash : undefined),
    () => undefined,
  );
  let sameAs = loadedStat;
  return async (onExit, index, loadSignal) => {
    const now = statOf(path);
    // A file that is gone fails the load with its own message (ENOENT). One whose stat changed is
    // read again: touched, or copied over with the same bytes (rsync, git-sync, a redeploy of the
    // same model), it is the same model, and refusing its restart left the version without instances.
    if (now !== undefined && now !== sameAs) {
      const [was, is] = await Promise.all([loadedHash, contentHashOf(path).catch(() => undefined)]);
      if (is !== undefined && is !== was)
        throw new BatchlineError(
          'MODEL_LOAD_FAILED',
          `${path} was replaced or modified since this version loaded it, and a restart would serve the new file under the old version: register it as a new version (or restart the server)`,
        );
      if (is !== undefined) sameAs = now;
    }
    return launcher(onExit, index, loadSignal);
  };
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

/** SHA-256 of a file's bytes, streamed a MiB at a time. */
async function contentHashOf(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
