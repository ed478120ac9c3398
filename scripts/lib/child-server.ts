import { spawn, type ChildProcess } from 'node:child_process';

export interface ChildServer {
  url: string;
  process: ChildProcess;
  /** What it printed up to and including its `listening on` line. */
  banner: string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts a server in its own process (so it does not share a core with the load generator)
 * and resolves once it prints `listening on <url>`. Its stderr is this process's, or a pipe
 * (`child.process.stderr`) for a caller that counts what it logs.
 */
export function startChildServer(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  stderr: 'inherit' | 'pipe' = 'inherit',
): Promise<ChildServer> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', stderr] });
    let output = '';
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (\S+)/.exec(output);
      if (match === null) return;
      child.stdout!.off('data', onData);
      child.stdout!.resume();
      resolve({
        url: match[1] as string,
        process: child,
        banner: output,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done(child.exitCode);
            child.once('exit', (code) => done(code));
            child.kill('SIGTERM');
          }),
      });
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`${command} ${args.join(' ')} exited with ${code} before listening:\n${output}`)),
    );
  });
}
