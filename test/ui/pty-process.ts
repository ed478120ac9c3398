import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Runs a command on a pseudo-terminal of `columns`×`rows` (Python's pty module: no node-pty here),
 * as a user's terminal would: the command's stdout and stdin are a TTY, it draws its dashboard.
 * `pid` is the command's own process (signals go to it, not to the Python parent); `exited` is its
 * exit code, 128 + N when signal N ended it, as a shell reports it.
 */
export function spawnOnPty(
  argv: readonly string[],
  size: { columns: number; rows: number },
  env: NodeJS.ProcessEnv = process.env,
): { output: () => string; pid: Promise<number>; exited: Promise<number>; child: ChildProcess } {
  const child = spawn('/usr/bin/python3', ['-c', PTY_PY, String(size.columns), String(size.rows), ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  let errors = '';
  const pid = new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      errors += chunk.toString('utf8');
      const match = /^pid (\d+)\n/.exec(errors);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`the pty helper ended before the command started: ${errors}`)));
  });
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
  return { output: () => output, pid, exited, child };
}

const PTY_PY = `
import fcntl, os, pty, struct, sys, termios
columns, rows = int(sys.argv[1]), int(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', rows, columns, 0, 0))
    os.execvp(sys.argv[3], sys.argv[3:])
sys.stderr.write('pid %d\\n' % pid)
sys.stderr.flush()
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
`;
