/**
 * How the docs test reads a markdown guide: its ```bash (and ```sh) blocks, each split into the
 * commands bash reads (one may span lines), and what the guide says of each, read from the guide
 * itself:
 * - a command exits 0, unless its trailing comment says `exits N` (exactly N) or `exits N if …`
 *   (0 or N: a verdict that depends on timing, such as a p99 threshold);
 * - a comment line `# → text` under a command is part of what it prints (`…` stands for anything,
 *   runs of spaces match any spacing); guides quote there only what the code decides (counts,
 *   recommendations, error codes, a reply's fields), never timings;
 * - a block right under `<!-- doc-test: skip — reason -->` is not run (a container engine, a
 *   cluster, a Python package); the reason is the guide's own account of why;
 * - a `batchline serve` command is the guide's "terminal 1" (or its `… serve &`), which the runner
 *   (doc-runner.ts) starts in the background.
 */
import { spawnSync } from 'node:child_process';

export interface DocCommand {
  /** 1-based line of the guide where the command starts. */
  line: number;
  text: string;
  /** Exit statuses the guide allows. */
  exits: number[];
  /** `# → …` lines: fragments of what it prints. */
  prints: string[];
  server: boolean;
}

export interface DocBlock {
  line: number;
  skip?: string;
  commands: DocCommand[];
}

/** What a line's trailing comment says, if it has one outside quotes. */
function trailingComment(line: string): string | undefined {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '\\') i++;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) return line.slice(i + 1).trim();
  }
  return undefined;
}

function exitsOf(comment: string | undefined): number[] {
  const match =
    comment === undefined ? null : /\bexits? (?:with )?(?:status )?(\d+)(\s+(?:if|when|unless)\b)?/.exec(comment);
  if (match === null) return [0];
  const status = Number(match[1]);
  return match[2] === undefined ? [status] : [0, status];
}

/** True when bash reads `text` as complete commands (no open quote, loop, pipe or continuation). */
function complete(text: string): boolean {
  return spawnSync('bash', ['-n'], { input: text }).status === 0;
}

/** A `batchline serve` command, after any `npm install && ` and variable assignments. */
const SERVE = /^(?:npm\s+(?:install|ci)\s*&&\s*)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:npx\s+)?batchline\s+serve\b/;

/** The guide's bash blocks, each split into the commands it holds. */
export function parseGuide(markdown: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```bash' && lines[i] !== '```sh') continue;
    const marker = /^<!-- doc-test: skip\s*(?:—|-|:)?\s*(.*?)\s*-->$/.exec(lines[i - 1] ?? '');
    const block: DocBlock = { line: i + 1, commands: [] };
    if (marker !== null) block.skip = marker[1] || 'no reason given';
    let pending: { line: number; text: string[] } | undefined;
    let j = i + 1;
    for (; j < lines.length && lines[j] !== '```'; j++) {
      const text = lines[j] ?? '';
      if (pending === undefined) {
        const arrow = /^#\s*→\s?(.*)$/.exec(text);
        if (arrow !== null) {
          block.commands.at(-1)?.prints.push(arrow[1] ?? '');
          continue;
        }
        if (text.trim() === '' || text.trim().startsWith('#')) continue;
        pending = { line: j + 1, text: [] };
      }
      pending.text.push(text);
      const joined = pending.text.join('\n');
      if (text.endsWith('\\') || !complete(joined)) continue;
      const comment = trailingComment(pending.text.at(-1) ?? '');
      block.commands.push({
        line: pending.line,
        text: joined,
        exits: exitsOf(comment),
        prints: [],
        server: SERVE.test(joined.trim()),
      });
      pending = undefined;
    }
    if (pending !== undefined) throw new Error(`line ${pending.line}: a command that never ends (open quote?)`);
    blocks.push(block);
    i = j;
  }
  return blocks;
}

/** The port a guide's serve command listens on as the guide wrote it (`--port N`, else 8080). */
export function guidePort(text: string): number {
  return Number(/\s--port[\s=](\d+)/.exec(text)?.[1] ?? 8080);
}

/** A fragment of output as a pattern: `…` is anything on the line, spaces are any spacing. */
export function patternOf(fragment: string): RegExp {
  const parts = fragment
    .trim()
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+'));
  return new RegExp(parts.join('.*?'));
}
