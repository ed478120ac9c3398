/**
 * Runs the ```bash (and ```sh) blocks of a markdown guide as a user would type them, one command after the
 * other in one bash session (so `MODEL=…`, `&` and `wait` carry from line to line), and says for
 * each command whether it did what the guide says (read by guide-blocks.ts: its exit status, what
 * it prints, the blocks not to run).
 *
 * How it runs them, and why it differs from a terminal where it does:
 * - `npx batchline` is the checkout's own `bin/batchline.js` (what npx resolves it to in a
 *   checkout), without npx's lookup, and so is a bare `batchline` (a guide that writes it means
 *   the installed binary, as in a project that depends on batchline);
 * - `npm install`, `npm ci`, `npm test` and `npm run build` are not run again: the docs test runs
 *   inside `npm test`, after the install and the build; `npm install <package>` fails (it would
 *   reach the registry): a guide marks such a block skip and says how it is tested instead;
 * - a `batchline serve` command is the guide's "terminal 1" (or its `… serve &`): it is started in
 *   the background on a free port (`--port 0`, as every network test here), the commands after it
 *   reach that port where the guide says 127.0.0.1:8080 or localhost:8080 (or the `--port` the
 *   guide gave it), and it is stopped with SIGTERM (and must drain and exit 0) when the next one
 *   starts or the guide ends; a serve in the foreground ("terminal 1") is another shell and does
 *   not see the variables the guide set (`MODEL=…`), one started with `&` does;
 * - bench runs for 1 s with no warm-up where the guide gives a longer `-d`/`--duration` or none
 *   (its default is 10 s) and no `--stable` (whose windows the guide sets), each `--stages` stage lasts 1 s (a warm-up as long as a 1 s run would
 *   leave its sends queued behind the warm-up's), and profile times 10
 *   runs of each batch size (after 2) and its real serve for 1 s: the test checks that the
 *   commands run and what the code decides, not figures that take time to settle;
 * - a bench that exits where the guide does not allow it, saying it sent nothing (a host stopped
 *   through its whole second), runs again, up to 3 runs in all, and is judged on its last run;
 * - it all happens in a temporary directory holding links to the checkout's files, so the files
 *   the guide writes (`before.json`, `x.bin`…) land there and are removed afterwards; each must
 *   be one the checkout's .gitignore leaves out, where a reader's commands write them.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DocBlock, type DocCommand, guidePort, parseGuide, patternOf } from './guide-blocks.js';

export const ROOT = join(import.meta.dirname, '..', '..');

/** `npm install && ` before a command: the install is done before the tests (see above). */
const INSTALL_FIRST = /^npm\s+(?:install|ci)\s*&&\s*/;

/** A command as the test runs it: bench and profile shortened, the server's port put in. */
export function adapt(command: DocCommand, served?: { port: number; guidePort: number }): string {
  let text = command.text;
  if (served !== undefined) {
    const written = new RegExp(`\\b(?:127\\.0\\.0\\.1|localhost):${served.guidePort}\\b`, 'g');
    text = text.replace(written, `127.0.0.1:${served.port}`);
  }
  if (/\bbatchline\s+bench\b/.test(text) && !/\bbench\s+(?:compare|merge)\b/.test(text)) {
    text = text.replace(/(\s(?:-d|--duration)\s+)\S+/g, '$11').replace(/\s--warmup\s+\S+/g, '');
    text = text.replace(/(\s--stages\s+['"]?)([^'"\s]+)/, (_all, flag: string, stages: string) => {
      return flag + stages.replace(/[^,:]+:/g, '1s:');
    });
    // --stable's windows bound it (and refuse -d); its --window and --max-windows are the guide's.
    const bounded = /\s(?:-d|--duration|-n|--requests|--stages|--stable)\s/.test(text);
    text = text.replace(/\bbatchline\s+bench\b/, `batchline bench --warmup 0${bounded ? '' : ' -d 1'}`);
  }
  if (/\bbatchline\s+profile\b/.test(text) && !/--serve-duration|--repetitions|--warmup/.test(text)) {
    // --serve-duration applies to a model file only (profile refuses it for the embedded model).
    const serve = /\s--model\s/.test(text) ? ' --serve-duration 1s' : '';
    text = text.replace(/\bbatchline\s+profile\b/, `batchline profile${serve} --repetitions 10 --warmup 2`);
  }
  return text;
}

/** Runs of a command whose bench sent nothing: a second stall through a whole 1 s run is rarer still. */
export const SENT_NOTHING_RUNS = 3;

/** What bench says when its run measured nothing because it sent nothing (bench-exit-codes' nothingSucceeded). */
export function sentNothing(output: string): boolean {
  return /^batchline bench: no request succeeded \(no 2xx answer among 0 sent\b/m.test(output);
}

const PRELUDE = `
exec 2>&1
npx() { if [ "$1" = batchline ]; then shift; node "$DOC_ROOT/bin/batchline.js" "$@"; else command npx "$@"; fi; }
batchline() { node "$DOC_ROOT/bin/batchline.js" "$@"; }
npm() {
  case "$*" in
    install|ci|test|"run build"|"run build --silent") echo "(docs test: npm $* was done before the tests)";;
    "install "*|"i "*|"ci "*) echo "(docs test: npm $* would install from the registry; mark the block skip)"; return 1;;
    *) command npm "$@";;
  esac
}
export -f npx npm batchline
`;

/** The checkout's files the guides use, linked into the directory the commands run in. */
const LINKED = new Set([
  'bin',
  'dist',
  'src',
  'test',
  'examples',
  'docs',
  'scripts',
  'node_modules',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.browser.json',
  'vitest.config.ts',
  '.npmrc',
]);

interface Served {
  process: ChildProcess;
  port: number;
  /** The port the guide wrote for it, which its commands name. */
  guidePort: number;
  log: string[];
  line: number;
}

/** One bash session in a scratch directory, fed one command at a time. */
export class GuideSession {
  readonly dir = mkdtempSync(join(tmpdir(), 'batchline-doc-test-'));
  private readonly shell: ChildProcess;
  private output = '';
  private waiting: (() => void) | undefined;
  private server: Served | undefined;
  readonly failures: string[] = [];
  /** Each command as it ran: its exit status and the last lines it printed. */
  readonly transcript: string[] = [];
  private count = 0;
  /** Shell variables the guide set on a line of their own (`MODEL=…`), for the servers it starts with `&`. */
  private readonly vars: Record<string, string> = {};

  constructor(private readonly guide: string) {
    for (const name of readdirSync(ROOT)) if (LINKED.has(name)) symlinkSync(join(ROOT, name), join(this.dir, name));
    this.shell = spawn('bash', ['--noprofile', '--norc'], {
      cwd: this.dir,
      env: { ...process.env, DOC_ROOT: ROOT, CI: 'true', NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['pipe', 'pipe', 'pipe'],
      // A process group of its own: whatever a command leaves running is ended with the session.
      detached: true,
    });
    const collect = (chunk: Buffer) => {
      this.output += chunk.toString();
      this.waiting?.();
    };
    this.shell.stdout?.on('data', collect);
    this.shell.stderr?.on('data', collect);
    this.shell.stdin?.write(PRELUDE);
  }

  private fail(command: DocCommand, why: string, output: string): void {
    const tail = output.trim().split('\n').slice(-15).join('\n    ');
    this.failures.push(
      `${this.guide}:${command.line}: ${command.text.split('\n')[0]}\n  ${why}\n  output:\n    ${tail}\n` +
        '  (a command that cannot run here: mark its block with <!-- doc-test: skip — why --> in the guide)',
    );
  }

  /** Runs one command of the guide and checks its exit status and output. */
  async run(command: DocCommand, timeoutMs = 120_000): Promise<void> {
    if (command.server) return this.serve(command, timeoutMs);
    const assignment = /^([A-Z_][A-Z0-9_]*)=([^\s;&|'"$`]*)$/.exec(command.text.trim());
    if (assignment !== null) this.vars[assignment[1] ?? ''] = assignment[2] ?? '';
    let { status, output } = await this.execute(command, timeoutMs);
    // A bench shortened to 1 s on a host stopped through that second sends nothing, and rightly
    // exits 1 (no 2xx among 0 sent). Only then, and only where the guide does not allow it, the
    // same command runs again (up to SENT_NOTHING_RUNS in all): a bench that never sends still
    // fails, on its last run, with every check; one that sent anything is judged as it ran.
    for (let run = 1; run < SENT_NOTHING_RUNS && !command.exits.includes(status) && sentNothing(output); run++) {
      this.transcript.push(`${this.guide}:${command.line} sent nothing (run ${run}): run again`);
      ({ status, output } = await this.execute(command, timeoutMs));
    }
    if (!command.exits.includes(status)) {
      this.fail(command, `exited ${status}, the guide says ${command.exits.join(' or ')}`, output);
    }
    for (const fragment of command.prints) {
      if (!patternOf(fragment).test(output)) this.fail(command, `did not print "${fragment}"`, output);
    }
  }

  /** Runs one command in the session; its exit status and what it printed. */
  private async execute(command: DocCommand, timeoutMs: number): Promise<{ status: number; output: string }> {
    const n = ++this.count;
    const done = `@@doc-exit ${n} `;
    const start = this.output.length;
    this.shell.stdin?.write(`{\n${adapt(command, this.server)}\n} < /dev/null\necho "${done}$?"\n`);
    const finished = await this.until(() => this.output.indexOf(done, start) >= 0, timeoutMs);
    const end = this.output.indexOf(done, start);
    const output = this.output.slice(start, end >= 0 ? end : undefined);
    if (!finished) {
      this.fail(command, `did not finish within ${timeoutMs / 1000} s`, output);
      throw new Error(this.failures.join('\n'));
    }
    const status = Number(/^(\d+)/.exec(this.output.slice(end + done.length))?.[1]);
    const lines = output
      .trim()
      .split('\n')
      .filter((line) => line.trim() !== '');
    this.transcript.push(
      `${this.guide}:${command.line} exit ${status}: ${command.text.split('\n')[0]}\n    ${lines.slice(-3).join('\n    ')}`,
    );
    return { status, output };
  }

  private async serve(command: DocCommand, timeoutMs: number): Promise<void> {
    await this.stopServer();
    // `A=1 B=2 npx batchline serve …`: the assignments go to its environment, the rest is exec'd,
    // so that SIGTERM reaches batchline itself.
    let text = command.text.replace(/\s+#.*$/, '').trim();
    // `… serve &` runs in the guide's own shell and sees the variables it set; a serve in the
    // foreground is "terminal 1", another shell, which does not.
    const sameShell = text.endsWith('&');
    text = text.replace(/\s*&$/, '').replace(INSTALL_FIRST, '');
    const written = guidePort(text);
    text = text.replace(/\s--port[\s=]\d+/, '');
    const shellVars = sameShell ? this.vars : {};
    const env: Record<string, string> = { ...process.env, ...shellVars } as Record<string, string>;
    for (
      let match = /^([A-Z_][A-Z0-9_]*)=(\S*)\s+/.exec(text);
      match !== null;
      match = /^([A-Z_][A-Z0-9_]*)=(\S*)\s+/.exec(text)
    ) {
      env[match[1] ?? ''] = match[2] ?? '';
      text = text.slice(match[0].length);
    }
    text = text.replace(/^(?:npx\s+)?batchline\b/, 'node "$DOC_ROOT/bin/batchline.js"');
    const child = spawn('bash', ['-c', `exec ${text} --port 0 --no-ui`], {
      cwd: this.dir,
      env: { ...env, ...shellVars, DOC_ROOT: ROOT },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const served: Served = { process: child, port: 0, guidePort: written, log: [], line: command.line };
    const listening = new Promise<number>((resolve) => {
      const read = (chunk: Buffer) => {
        served.log.push(chunk.toString());
        const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(served.log.join(''))?.[1];
        if (port !== undefined) resolve(Number(port));
      };
      child.stdout?.on('data', read);
      child.stderr?.on('data', read);
      child.on('exit', () => resolve(0));
    });
    let timer: NodeJS.Timeout | undefined;
    const port = await Promise.race([
      listening,
      new Promise<number>((resolve) => {
        timer = setTimeout(() => resolve(-1), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (port <= 0) {
      child.kill('SIGKILL');
      const why = port === 0 ? 'the server exited before it listened' : 'the server did not listen';
      this.fail(command, why, served.log.join(''));
      throw new Error(this.failures.join('\n'));
    }
    served.port = port;
    this.server = served;
  }

  /** Stops the guide's server as Ctrl-C would, and checks that it drained and exited 0. */
  async stopServer(): Promise<void> {
    const served = this.server;
    if (served === undefined) return;
    this.server = undefined;
    const exited = new Promise<number | null>((resolve) => served.process.on('exit', (code) => resolve(code)));
    served.process.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'late'>((r) => setTimeout(() => r('late'), 20_000))]);
    if (code !== 0) {
      if (code === 'late') served.process.kill('SIGKILL');
      this.failures.push(
        `${this.guide}:${served.line}: the server ${code === 'late' ? 'did not exit 20 s after SIGTERM' : `exited ${code} after SIGTERM, not 0`}\n  ${served.log.join('').trim().split('\n').slice(-10).join('\n  ')}`,
      );
    }
  }

  private until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    if (condition()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        resolve(false);
      }, timeoutMs);
      this.waiting = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiting = undefined;
        resolve(true);
      };
    });
  }

  /**
   * What the guide's commands left in the directory they ran in (the checkout, for a reader) that
   * the checkout's .gitignore does not leave out: the README says it leaves them all out.
   */
  notIgnored(): string[] {
    if (spawnSync('git', ['-C', ROOT, 'rev-parse'], { stdio: 'ignore' }).status !== 0) return [];
    return readdirSync(this.dir, { withFileTypes: true })
      .filter((entry) => !LINKED.has(entry.name))
      .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
      .filter((path) => spawnSync('git', ['-C', ROOT, 'check-ignore', '-q', '--no-index', '--', path]).status !== 0);
  }

  async close(): Promise<void> {
    await this.stopServer();
    this.shell.stdin?.end('wait; exit\n');
    await new Promise((resolve) => {
      if (this.shell.exitCode !== null) resolve(undefined);
      else this.shell.on('exit', resolve);
      setTimeout(() => resolve(undefined), 10_000).unref();
    });
    try {
      if (this.shell.pid !== undefined) process.kill(-this.shell.pid, 'SIGKILL');
    } catch {
      // The group is gone already: nothing was left running.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Programs a guide's commands may use besides Node's and the shell's, and the package that has them. */
const PROGRAMS: Record<string, string> = { jq: "Debian's jq", curl: "Debian's curl" };

/** Why a block cannot run on this machine: a program it uses is not installed (skipped, as tests skip for a missing package). */
function missingProgram(block: DocBlock): string | undefined {
  for (const [program, source] of Object.entries(PROGRAMS)) {
    const used = block.commands.some((command) => new RegExp(`(?:^|[|;&(\\s])${program}\\s`).test(command.text));
    if (used && spawnSync('bash', ['-c', `command -v ${program}`]).status !== 0) {
      return `${program} is not installed here (${source})`;
    }
  }
  return undefined;
}

/** Runs every block of a guide that is not marked skip; returns what failed, and what was skipped. */
export async function runGuide(
  guide: string,
): Promise<{ failures: string[]; ran: number; skipped: string[]; slow: string[]; transcript: string[] }> {
  const blocks = parseGuide(readFileSync(join(ROOT, guide), 'utf8'));
  const session = new GuideSession(guide);
  let ran = 0;
  const skipped: string[] = [];
  const slow: string[] = [];
  try {
    for (const block of blocks) {
      const skip = block.skip ?? missingProgram(block);
      if (skip !== undefined) {
        skipped.push(`${guide}:${block.line}: ${skip}`);
        continue;
      }
      for (const command of block.commands) {
        const started = performance.now();
        await session.run(command);
        const seconds = (performance.now() - started) / 1000;
        if (seconds > 3) slow.push(`${guide}:${command.line} ${seconds.toFixed(1)} s: ${command.text.split('\n')[0]}`);
        ran++;
      }
    }
    for (const path of session.notIgnored()) {
      session.failures.push(
        `${guide}: its commands write ${path} into the checkout, and .gitignore does not leave it out`,
      );
    }
  } catch (error) {
    if (session.failures.length === 0) throw error;
  } finally {
    await session.close();
  }
  return { failures: session.failures, ran, skipped, slow, transcript: session.transcript };
}
