import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const srcDir = fileURLToPath(new URL('../src', import.meta.url));

/**
 * The floor plan of src/: each part (a folder, with its subfolders, or a file at the top) and the
 * parts below it that it may import. A contract two sides share lives below both; a command's
 * body lives in commands/, the one place that puts engines, reports and views together.
 */
const FLOOR_PLAN: Record<string, readonly string[]> = {
  core: [],
  // gRPC's status codes by name: the error table's gRPC column, and the gRPC listener's own answers.
  'grpc-status.ts': [],
  // Text fit for a message: a caller's detail made safe and short, a thrown value as text.
  'message-text.ts': [],
  'errors.ts': ['grpc-status.ts', 'message-text.ts'],
  'version.ts': [],
  // A core refusal or failed outcome as a row of the error table: the routes and batch() answer with it.
  'outcome-errors.ts': ['core', 'errors.ts'],
  // The codes an item's Error carries to blame its input: serve's code models and batch()'s stats read one rule.
  'item-client-codes.ts': ['errors.ts'],
  options: ['core', 'errors.ts', 'message-text.ts'],
  'stats-contract': ['core', 'errors.ts'],
  model: ['core', 'errors.ts', 'item-client-codes.ts', 'message-text.ts', 'options'],
  protocol: ['model', 'errors.ts', 'message-text.ts'],
  bench: ['core', 'errors.ts', 'options', 'stats-contract'],
  profile: ['bench', 'core', 'errors.ts', 'model', 'options', 'protocol'],
  simulate: ['core', 'errors.ts', 'options', 'profile'],
  serve: [
    'core',
    'errors.ts',
    'message-text.ts',
    'grpc-status.ts',
    'outcome-errors.ts',
    'version.ts',
    'options',
    'stats-contract',
    'model',
    'protocol',
    'profile',
  ],
  report: ['bench', 'core', 'errors.ts', 'model', 'options', 'profile', 'simulate', 'stats-contract'],
  watch: ['errors.ts', 'report', 'stats-contract'],
  ui: ['core', 'report', 'stats-contract', 'watch'],
  commands: [
    'bench',
    'core',
    'errors.ts',
    'model',
    'options',
    'profile',
    'protocol',
    'report',
    'serve',
    'simulate',
    'stats-contract',
    'ui',
    'watch',
  ],
  'cli.ts': ['commands', 'errors.ts', 'version.ts'],
  // The library's face: batch() over the core, serve() over the server (loaded lazily).
  library: [
    'core',
    'errors.ts',
    'item-client-codes.ts',
    'message-text.ts',
    'options',
    'outcome-errors.ts',
    'serve',
    'stats-contract',
    'version.ts',
  ],
  // model: the code-model contract's types (code-model-types.ts), exported type-only.
  'index.ts': ['core', 'library', 'model', 'stats-contract'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** The files of src/ that `file` imports (static, type-only, re-exported and lazy imports). */
function importedFiles(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import\(|import)\s*'(\.[^']+)'/g)].map((m) => m[1]!);
  return specifiers.flatMap((specifier) => {
    const path = join(dirname(file), specifier);
    const source = [path.replace(/\.js$/, '.ts'), path.replace(/\.js$/, '.tsx'), path].find(existsSync);
    return source === undefined || !/\.tsx?$/.test(source) ? [] : [source];
  });
}

/** The part of the floor plan a file of src/ belongs to. */
function partOf(file: string): string {
  return relative(srcDir, file).split('/')[0]!;
}

const files = sourceFiles(srcDir);
const imports = new Map(files.map((file) => [file, importedFiles(file)]));

/** The first loop found in `edges` (as the nodes around it), or undefined. */
function findCircle(nodes: Iterable<string>, edges: (node: string) => readonly string[]): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of edges(node)) {
      const circle = visit(next);
      if (circle !== undefined) return circle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of nodes) {
    const circle = visit(node);
    if (circle !== undefined) return circle;
  }
  return undefined;
}

describe('layers', () => {
  it('every folder and file at the top of src/ has its floor in the plan', () => {
    expect(readdirSync(srcDir).sort()).toEqual(Object.keys(FLOOR_PLAN).sort());
  });

  it('the plan has floors: no part may import, through others, a part that may import it', () => {
    expect(findCircle(Object.keys(FLOOR_PLAN), (part) => FLOOR_PLAN[part] ?? [])).toBeUndefined();
  });

  it.each(Object.keys(FLOOR_PLAN))('%s imports only itself and the parts below it', (part) => {
    const allowed = new Set([part, ...FLOOR_PLAN[part]!]);
    const upward = files
      .filter((file) => partOf(file) === part)
      .flatMap((file) =>
        imports
          .get(file)!
          .filter((imported) => !allowed.has(partOf(imported)))
          .map((imported) => `${relative(srcDir, file)} -> ${relative(srcDir, imported)}`),
      );
    expect(upward).toEqual([]);
  });

  it('docs/architecture.md draws every part on its floor: each above the parts it may import', () => {
    const architecture = readFileSync(join(srcDir, '..', 'docs', 'architecture.md'), 'utf8');
    const drawing = /## The floors\n[\s\S]*?```\n([\s\S]*?)```/.exec(architecture)?.[1] ?? '';
    const lines = drawing.split('\n');
    // The line a part is drawn on: its name as a word (a folder with its slash), not in a description.
    const lineOf = (part: string): number => {
      const name = part.endsWith('.ts') ? part : `${part}/`;
      return lines.findIndex((line) => line.split(/\s+/).includes(name));
    };
    expect(Object.keys(FLOOR_PLAN).filter((part) => lineOf(part) < 0)).toEqual([]);
    const drawnBelowIt = Object.entries(FLOOR_PLAN).flatMap(([part, below]) =>
      below.filter((other) => lineOf(other) <= lineOf(part)).map((other) => `${part} may import ${other}`),
    );
    expect(drawnBelowIt).toEqual([]);
  });

  it('no files import each other in a circle', () => {
    const circle = findCircle(files, (file) => imports.get(file) ?? []);
    expect(circle?.map((file) => relative(srcDir, file))).toBeUndefined();
  });
});
