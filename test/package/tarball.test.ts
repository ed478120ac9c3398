/**
 * The package as a user gets it: `npm pack` on a copy of the project (its `prepack` builds from
 * a clean `dist/`), the tarball installed into an empty directory from the registry (the npm
 * cache first) with the README's line for offline machines, and batchline run from there: the
 * CLI, and the library imported from JavaScript (ESM and CommonJS) and TypeScript (5.9, which
 * builds the project, and 7.0, which `npm install typescript` gives a user).
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const NOT_COPIED = new Set(['node_modules', 'dist', '.git', '.scratch', '.vitest-cache']);
/** onnxruntime-node's own switch for its CUDA download (the README's line for offline machines). */
const OFFLINE_ENV = {
  ...process.env,
  ONNXRUNTIME_NODE_INSTALL: 'skip',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
};

let work: string;
let app: string;
let packedFiles: string[];
let installLog: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'batchline-pack-'));
  const project = join(work, 'project');
  // A copy, so the clean build of `prepack` cannot pull dist/ from under the tests running beside it.
  cpSync(ROOT, project, {
    recursive: true,
    filter: (path) => !NOT_COPIED.has(relative(ROOT, path).split('/')[0] ?? ''),
  });
  symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: project, env: OFFLINE_ENV });
  const [manifest] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [
    { filename: string; files: { path: string }[] },
  ];
  packedFiles = manifest.files.map((file) => file.path);

  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'batchline-tarball-check', version: '1.0.0', private: true }),
  );
  const installed = await run('npm', ['install', '--prefer-offline', join(work, manifest.filename)], {
    cwd: app,
    env: OFFLINE_ENV,
  });
  installLog = installed.stdout + installed.stderr;
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const batchline = (args: string[]) => run('npx', ['batchline', ...args], { cwd: app, env: OFFLINE_ENV });

describe('the npm package', () => {
  it('carries the built code, bin/, the sources its source maps name, README and LICENSE; no tests, no CI', () => {
    for (const path of [
      'bin/batchline.js',
      'dist/src/cli.js',
      'dist/src/cli.js.map',
      'src/cli.ts',
      'README.md',
      'LICENSE',
      'package.json',
    ]) {
      expect(packedFiles).toContain(path);
    }
    const strays = packedFiles.filter((path) =>
      /^(test|\.ci|scripts|dist\/scripts|docs|examples)\/|^tsconfig|^vitest|^\.npmrc/.test(path),
    );
    expect(strays).toEqual([]);
  });

  it('installs from the registry without an engine warning', () => {
    expect(installLog).not.toMatch(/EBADENGINE/);
    expect(installLog).toMatch(/added \d+ packages/);
  });

  it('runs `npx batchline --version`', async () => {
    expect((await batchline(['--version'])).stdout.trim()).toBe(VERSION);
  });

  it('runs `npx batchline simulate --rate 100 --requests 1000`', async () => {
    const { stdout } = await batchline(['simulate', '--rate', '100', '--requests', '1000']);
    expect(stdout).toMatch(/arrived 1000 · admitted 1000/);
  });

  it('writes `simulate --html` from the page scripts it carries (dist/browser/)', async () => {
    for (const path of [
      'dist/browser/report.js',
      'dist/browser/report.css',
      'dist/browser/timeline.js',
      'dist/browser/model-panel.js',
    ])
      expect(packedFiles).toContain(path);
    await batchline(['simulate', '--rate', '100', '--requests', '100', '--html', 'page.html']);
    const page = readFileSync(join(app, 'page.html'), 'utf8');
    expect(page).toContain('id="batchline-timeline"');
    expect(page).toContain('id="model-panel"');
    expect(page.length).toBeGreaterThan(200_000);
  });

  it('serves one /v1/infer with onnxruntime, then drains on SIGTERM and exits 0', async () => {
    const bin = join(app, 'node_modules', 'batchline', 'bin', 'batchline.js');
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--no-ui'], { cwd: app, env: OFFLINE_ENV });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', () => {
          const match = /listening on (\S+)/.exec(output);
          if (match?.[1]) resolve(match[1]);
        });
        void exited.then((code) => reject(new Error(`serve exited with ${code} before listening: ${output}`)));
      });
      const response = await request(`${url}/v1/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
      });
      expect(response.statusCode).toBe(200);
      const body = (await response.body.json()) as {
        prediction: { label: string; score: number; model_version: string };
      };
      expect(body.prediction.model_version).toBe('toy-logistic-v1');
      expect(body.prediction.score).toBeGreaterThan(0);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(output).toMatch(/SIGTERM: draining/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('says what to do when npm left the optional onnxruntime-node out', async () => {
    const runtime = join(app, 'node_modules', 'onnxruntime-node');
    renameSync(runtime, `${runtime}.away`);
    try {
      // A node_modules above the temporary directory (a /tmp/node_modules, say) would hand serve an
      // onnxruntime-node all the same: say so, rather than time out with a server left running.
      const found = (() => {
        try {
          return createRequire(join(app, 'package.json')).resolve('onnxruntime-node');
        } catch {
          return undefined;
        }
      })();
      expect(found, `onnxruntime-node is still found outside the project, at ${found}`).toBeUndefined();
      // The binary itself, not npx (which does not pass a signal on), and a bound on the wait.
      const bin = join(app, 'node_modules', 'batchline', 'bin', 'batchline.js');
      const failed = await run(process.execPath, [bin, 'serve', '--port', '0', '--no-ui'], {
        cwd: app,
        env: OFFLINE_ENV,
        timeout: 30_000,
        killSignal: 'SIGKILL',
      }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toMatch(/onnxruntime-node is not installed/);
      expect(failed?.stderr).toMatch(/ONNXRUNTIME_NODE_INSTALL=skip npm install path\/to\/batchline-0\.1\.0\.tgz/);
      expect(failed?.stderr).not.toMatch(/unexpected error| {4}at /);
      // serve() from code says the same, as a BatchError of the server's code (it was the bare ERR_MODULE_NOT_FOUND).
      writeFileSync(
        join(app, 'serve-no-runtime.mjs'),
        [
          "import { serve, BatchError } from 'batchline';",
          // The embedded model, and a model file on a thread (each instance's load failed, as model_load_failed).
          `for (const options of [{}, { model: ${JSON.stringify(join(ROOT, 'examples', 'image-classifier', 'models', 'classifier', '1', 'model.onnx'))} }]) {`,
          '  const error = await serve(options).then(() => undefined, (thrown) => thrown);',
          '  console.log(error instanceof BatchError, error?.code, /npm install path\\/to/.test(error?.message));',
          '}',
        ].join('\n'),
      );
      expect((await node(['serve-no-runtime.mjs'])).stdout.trim()).toBe(
        'true runtime_not_installed true\ntrue runtime_not_installed true',
      );
      // A server of code models alone needs no onnxruntime: it was refused as runtime_not_installed.
      writeFileSync(
        join(app, 'double.mjs'),
        [
          "export const inputs = [{ name: 'x', datatype: 'FP32', shape: [-1] }];",
          "export const outputs = [{ name: 'y', datatype: 'FP32', shape: [-1] }];",
          'export const execute = (items) => items.map((item) => ({ y: item.x.map((v) => 2 * v) }));',
        ].join('\n'),
      );
      writeFileSync(
        join(app, 'serve-code-no-runtime.mjs'),
        [
          "import { serve } from 'batchline';",
          `const server = await serve({ model: ${JSON.stringify(join(app, 'double.mjs'))} });`,
          "const response = await fetch(new URL('/v2/models/double/infer', server.url), {",
          "  method: 'POST',",
          "  headers: { 'content-type': 'application/json' },",
          "  body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] }),",
          '});',
          'console.log(response.status, JSON.stringify((await response.json()).outputs[0].data));',
          'await server.close();',
        ].join('\n'),
      );
      expect((await node(['serve-code-no-runtime.mjs'])).stdout.trim()).toBe('200 [2,4]');
      expect((await batchline(['simulate', '--rate', '100', '--requests', '100'])).stdout).toMatch(/arrived 100 /);
    } finally {
      renameSync(`${runtime}.away`, runtime);
    }
  });
});

const node = (args: string[], cwd = app) => run(process.execPath, args, { cwd, env: OFFLINE_ENV });

describe("the library: import { batch } from 'batchline'", () => {
  it('carries its entry and type declarations, named by `exports`', () => {
    for (const path of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/library/batch.d.ts'])
      expect(packedFiles).toContain(path);
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules', 'batchline', 'package.json'), 'utf8'));
    expect(manifest.exports['.']).toEqual({ types: './dist/src/index.d.ts', default: './dist/src/index.js' });
  });

  it('batches calls from JavaScript (ESM) and rejects with the error classes', async () => {
    writeFileSync(
      join(app, 'library.mjs'),
      [
        "import { batch, QueueFullError } from 'batchline';",
        'const sizes = [];',
        'const double = batch(async (xs) => { sizes.push(xs.length); return xs.map((x) => x * 2); },',
        '  { maxBatchSize: 4, batchWindowMs: 60000, maxQueueSize: 4 });',
        '// Four run at once (a full batch), four wait (the queue holds four), the ninth is refused.',
        'const calls = [1, 2, 3, 4, 5, 6, 7, 8].map((x) => double(x));',
        'const refused = await double(9).catch((error) => error);',
        'await double.close();',
        'console.log(JSON.stringify({ results: await Promise.all(calls), sizes, refused: [refused instanceof QueueFullError, refused.code, refused.statusCode] }));',
      ].join('\n'),
    );
    const { stdout } = await node(['library.mjs']);
    expect(JSON.parse(stdout)).toEqual({
      results: [2, 4, 6, 8, 10, 12, 14, 16],
      sizes: [4, 4],
      refused: [true, 'queue_full', 429],
    });
  });

  it('is loaded by CommonJS with require() on this Node (20.19 and later), and with import() on any', async () => {
    writeFileSync(
      join(app, 'commonjs.cjs'),
      [
        "const { batch } = require('batchline');",
        'const upper = batch(async (xs) => xs.map((s) => s.toUpperCase()));',
        "upper('cjs').then(async (answer) => {",
        "  const dynamic = await import('batchline');",
        '  console.log(answer, typeof dynamic.serve);',
        '});',
      ].join('\n'),
    );
    const { stdout } = await node(['commonjs.cjs']);
    expect(stdout.trim()).toBe('CJS function');
  });

  it('starts the whole server with serve() and closes it', async () => {
    writeFileSync(
      join(app, 'server.mjs'),
      [
        "import { serve } from 'batchline';",
        'const server = await serve({ modelLatencyMs: 0 });',
        "const answer = await fetch(server.url + '/v1/infer', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }) });",
        'const body = await answer.json();',
        'await server.close();',
        'console.log(answer.status, body.prediction.model_version);',
      ].join('\n'),
    );
    const { stdout } = await node(['server.mjs']);
    expect(stdout.trim()).toBe('200 toy-logistic-v1');
  });
});

/**
 * The compilers the library's types are checked with: the repository's own, and the one
 * `npm install typescript` gives a user today (7.0, the native port; `typescript-7` is its alias
 * among the devDependencies, beside 5.9, which builds the project).
 */
const COMPILERS: [version: string, packageName: string][] = [
  ['5.9', 'typescript'],
  ['7.0', 'typescript-7'],
];

describe.each(COMPILERS)("the library's types under TypeScript %s", (version, packageName) => {
  const tsc = join(ROOT, 'node_modules', packageName, 'bin', 'tsc');
  /** This compiler's own folder of the app, so that its sources and output stand apart from the other's. */
  let dir: string;
  beforeAll(() => {
    dir = join(app, `typescript-${version}`);
    mkdirSync(dir);
  });

  /**
   * What tsc reports for one file under strict nodenext (and `options`), empty when it compiles.
   * A project of its own: TypeScript 7 refuses a file named on the command line beside a
   * tsconfig.json (TS5112), and this folder has one.
   */
  const typeErrors = (file: string, options: Record<string, unknown> = {}): Promise<string> => {
    const project = `tsconfig.${file}.json`;
    writeFileSync(
      join(dir, project),
      JSON.stringify({
        compilerOptions: {
          ...options,
          noEmit: true,
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: [file],
      }),
    );
    return run(process.execPath, [tsc, '-p', project], { cwd: dir, env: OFFLINE_ENV }).then(
      () => '',
      // A compiler that did not run (not installed, say) reports no error of the file: not a pass.
      (error: Error & { stdout: string }) => {
        if (!/error TS\d+/.test(error.stdout)) throw error;
        return error.stdout;
      },
    );
  };

  it(`is TypeScript ${version}, and runs on this Node`, async () => {
    const { stdout } = await run(process.execPath, [tsc, '--version'], { cwd: app, env: OFFLINE_ENV });
    expect(stdout.trim()).toMatch(new RegExp(`^Version ${version.replace('.', '\\.')}\\.\\d+$`));
  });

  it('type-checks TypeScript under moduleResolution nodenext, and runs it', async () => {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          outDir: 'out',
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['typed.mts'],
      }),
    );
    writeFileSync(
      join(dir, 'typed.mts'),
      [
        "import { batch, BatchError, type BatcherSnapshot, type BatchStats } from 'batchline';",
        'const lengths = batch(async (texts: string[]) => texts.map((text) => text.length), { maxBatchSize: 8 });',
        "const n: number = await lengths('hello', { timeoutMs: 500, signal: AbortSignal.timeout(1000) });",
        'const snapshot: BatcherSnapshot = lengths.stats();',
        '// A batch() snapshot always has its policy and breaker: no `?.` needed under strict.',
        'const stats: BatchStats = lengths.stats();',
        'const limit: number = lengths.stats().policy.limit;',
        'const breaker: string = stats.breaker;',
        'const error: BatchError | undefined = undefined;',
        '// An Error subclass in a slot fails its call: the answer type is the results alone.',
        'class NotFound extends Error { readonly statusCode = 404; }',
        "const byId = batch(async (ids: number[]) => ids.map((id) => (id === 1 ? { id, name: 'ada' } : new NotFound(String(id)))));",
        'const user: { id: number; name: string } = await byId(1);',
        '// A slot may hold a promise, as library.md says: the call resolves with its value (and an Error in it fails the call).',
        "const cached = new Map([[1, { id: 1, name: 'ada' }]]);",
        "const fetchUser = async (id: number) => ({ id, name: 'bob' });",
        'const byIdCached = batch((ids: number[]) => ids.map((id) => cached.get(id) ?? fetchUser(id)));',
        'const bob: { id: number; name: string } = await byIdCached(2);',
        "const byIdAsync = batch((ids: number[]) => ids.map(async (id) => (id === 1 ? { id, name: 'ada' } : new NotFound(String(id)))));",
        'const ada: { id: number; name: string } = await byIdAsync(1);',
        'await lengths.close({ drainMs: 100 });',
        'console.log(n, snapshot.counts.outcomes.ok, error, limit, breaker, user.name, bob.name, ada.name);',
      ].join('\n'),
    );
    await run(process.execPath, [tsc, '-p', '.'], { cwd: dir, env: OFFLINE_ENV });
    const { stdout } = await node([join('out', 'typed.mjs')], dir);
    expect(stdout.trim()).toBe('5 1 undefined 8 closed ada bob ada');
  });

  it("type-checks the library's declarations in a project without @types/node (the DOM lib's AbortSignal)", async () => {
    writeFileSync(
      join(dir, 'tsconfig.no-node.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          types: [],
        },
        files: ['typed-no-node.mts'],
      }),
    );
    writeFileSync(
      join(dir, 'typed-no-node.mts'),
      [
        "import { batch, type BatchStats } from 'batchline';",
        'const lengths = batch(async (texts: string[]) => texts.map((text) => text.length));',
        "export const n: Promise<number> = lengths('hello');",
        'export const stats: BatchStats = lengths.stats();',
      ].join('\n'),
    );
    // It failed in schema.d.ts: "Cannot find namespace 'NodeJS'" (an environment's type), unless skipLibCheck.
    await run(process.execPath, [tsc, '-p', 'tsconfig.no-node.json'], { cwd: dir, env: OFFLINE_ENV });
  });

  it('type-checks TypeScript compiled to CommonJS (module commonjs: 5.9 resolves as node10, the top-level types; 7.0 as bundler, the types of exports), and runs it', async () => {
    writeFileSync(
      join(dir, 'tsconfig.commonjs.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'commonjs',
          target: 'es2022',
          strict: true,
          outDir: 'out-commonjs',
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['typed-commonjs.ts'],
      }),
    );
    writeFileSync(
      join(dir, 'typed-commonjs.ts'),
      [
        "import { batch, QueueFullError } from 'batchline';",
        'const lengths = batch(async (texts: string[]) => texts.map((text) => text.length));',
        "lengths('hello').then((n: number) => console.log(n, typeof QueueFullError));",
      ].join('\n'),
    );
    await run(process.execPath, [tsc, '-p', 'tsconfig.commonjs.json'], { cwd: dir, env: OFFLINE_ENV });
    expect(readFileSync(join(dir, 'out-commonjs', 'typed-commonjs.js'), 'utf8')).toContain('require("batchline")');
    const { stdout } = await node([join('out-commonjs', 'typed-commonjs.js')], dir);
    expect(stdout.trim()).toBe('5 function');
  });

  it('makes a wrong item or answer type a compile error', async () => {
    writeFileSync(
      join(dir, 'wrong.mts'),
      [
        "import { batch, serve } from 'batchline';",
        'const lengths = batch(async (texts: string[]) => texts.map((text) => text.length));',
        'await lengths(42);',
        "const s: string = await lengths('x');",
        'console.log(s);',
        'await serve({ workers: 2 });',
      ].join('\n'),
    );
    const checked = await typeErrors('wrong.mts');
    expect(checked).toMatch(
      /wrong\.mts\(3,\d+\): error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'/,
    );
    expect(checked).toMatch(/wrong\.mts\(4,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
    // Named as the reader knows it, not as the 49 options' schema spelled out ('OptionInputs<{ readonly model: …').
    expect(checked).toMatch(/wrong\.mts\(6,\d+\): error TS2353: .*'workers' does not exist in type 'ServeOptions'\.$/m);
  });

  it('takes a key set to undefined, as library.md says, under exactOptionalPropertyTypes too', async () => {
    // An app's values are often `T | undefined` (a query parameter, a setting); under this flag an
    // optional key typed `?: number` refused them, though the library takes undefined as left out.
    writeFileSync(
      join(dir, 'exact.mts'),
      [
        "import { batch, serve, type LiveBatchOptions, type ResolvedBatchOptions } from 'batchline';",
        'declare const query: { priority?: string; drainMs?: number; size?: number; token?: string };',
        'const double = batch(async (xs: number[]) => xs.map((x) => x * 2), { maxBatchSize: query.size, batchPolicy: undefined, priorityQueuePolicy: undefined });',
        'await double(1, { priority: query.priority ? Number(query.priority) : undefined, timeoutMs: undefined, signal: undefined });',
        '// What it resolved stays free of undefined.',
        'const size: number = double.options.maxBatchSize;',
        "const policy: 'fixed' | 'aimd' | 'adaptive' = (double.options satisfies ResolvedBatchOptions).batchPolicy;",
        "// Live settings (Ray Serve's set_max_batch_size), and a batch limited by cost whose item type comes from the function.",
        'double.reconfigure({ maxBatchSize: query.size, batchWindowMs: undefined });',
        'const tokens = batch(async (texts: string[]) => texts.map((text) => text.length), { itemCost: (text) => text.length, maxBatchSize: 8192 });',
        'const live: LiveBatchOptions = { maxBatchSize: 4096 };',
        'tokens.reconfigure(live);',
        'await double.close({ drainMs: query.drainMs });',
        'const server = await serve({ adminToken: query.token, maxBatchSize: query.size, port: undefined });',
        'await server.close({ drainMs: query.drainMs });',
        'console.log(size, policy);',
      ].join('\n'),
    );
    expect(await typeErrors('exact.mts', { exactOptionalPropertyTypes: true })).toBe('');
  });

  it("types a batched function's options with the public ResolvedBatchOptions, which shows no internals", async () => {
    writeFileSync(
      join(dir, 'options.mts'),
      [
        "import { batch, type ResolvedBatchOptions } from 'batchline';",
        'const lengths = batch(async (texts: string[]) => texts.map((text) => text.length));',
        'const options: ResolvedBatchOptions = lengths.options;',
        'const size: number = options.maxBatchSize;',
        'console.log(size, options.mailbox, options.latencyPrior);',
      ].join('\n'),
    );
    const checked = await typeErrors('options.mts');
    expect(checked.match(/error TS/g)).toHaveLength(2);
    for (const name of ['mailbox', 'latencyPrior'])
      expect(checked).toMatch(
        new RegExp(
          `options\\.mts\\(5,\\d+\\): error TS2339: Property '${name}' does not exist on type 'ResolvedBatchOptions'\\.`,
        ),
      );
    // The declaration users read names no internal type of the core.
    const declaration = readFileSync(
      join(app, 'node_modules', 'batchline', 'dist', 'src', 'library', 'batch.d.ts'),
      'utf8',
    );
    expect(declaration).not.toContain('BatchingConfig');
    expect(declaration).not.toContain('/core/create-batcher');
  });

  it("lets an app with declaration: true export values of the library's types (every type they name is exported)", async () => {
    // A library or workspace package of the user's emits .d.ts: a value whose inferred type names
    // a type the entry does not export failed with TS2742 ("cannot be named without a reference
    // to '…/dist/src/core/types.js'. This is likely not portable"): BreakerState, PercentilesMs…
    writeFileSync(
      join(dir, 'tsconfig.declaration.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          declaration: true,
          emitDeclarationOnly: true,
          outDir: 'out-declaration',
          types: [],
        },
        files: ['exported.mts'],
      }),
    );
    writeFileSync(
      join(dir, 'exported.mts'),
      [
        "import { batch, type RunningServer, type TensorModel, type JsonModel } from 'batchline';",
        'export const lengths = batch(async (texts: string[]) => texts.map((text) => text.length));',
        'export const breaker = () => lengths.stats().breaker;',
        'export const latency = () => lengths.stats().latencyMs;',
        'export const counts = () => lengths.stats().counts;',
        'export const outcomes = () => lengths.stats().counts.outcomes;',
        'export const refusals = () => lengths.stats().counts.rejected;',
        'export const serverState = (server: RunningServer) => server.stats()?.state;',
        'export const firstModel = (server: RunningServer) => server.stats()?.models?.[0];',
        'export const modelState = (server: RunningServer) => server.stats()?.models?.[0]?.state;',
        'export const modelConfig = (server: RunningServer) => server.stats()?.config;',
        'export const byProtocol = (server: RunningServer) => server.stats()?.responsesByProtocol;',
        'export const datatype = (model: TensorModel) => model.inputs[0]?.datatype;',
        "export const itemValue = (item: Parameters<TensorModel['execute']>[0][number]) => item['x'];",
        'export const hooks = (model: JsonModel) => model.initialize;',
      ].join('\n'),
    );
    const emitted = await run(process.execPath, [tsc, '-p', 'tsconfig.declaration.json'], {
      cwd: dir,
      env: OFFLINE_ENV,
    }).then(
      () => '',
      (error: { stdout: string }) => error.stdout,
    );
    expect(emitted).toBe('');
    const declaration = readFileSync(join(dir, 'out-declaration', 'exported.d.mts'), 'utf8');
    expect(declaration).not.toMatch(/batchline\/dist/);
  });

  it('types a code model written in TypeScript (TensorModel), which compiles to a model.mjs that serve() serves', async () => {
    writeFileSync(
      join(dir, 'tsconfig.model.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          outDir: 'out-model',
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['model.mts', 'serve-model.mts'],
      }),
    );
    writeFileSync(
      join(dir, 'model.mts'),
      [
        "import type { TensorModel } from 'batchline';",
        "export const inputs: TensorModel['inputs'] = [{ name: 'x', datatype: 'FP32', shape: [3] }];",
        // Specs written `as const` (readonly arrays) are taken as they are.
        "export const outputs = [{ name: 'y', datatype: 'FP32', shape: [3] }] as const satisfies TensorModel['outputs'];",
        "export const execute: TensorModel['execute'] = (items) =>",
        "  items.map(({ x }) => (x instanceof Float32Array ? { y: x.map((v) => v * 2) } : new Error('x is not FP32')));",
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'serve-model.mts'),
      [
        "import { serve } from 'batchline';",
        // A file: URL as it is, as an ES module names its neighbours (`.pathname` is percent-encoded).
        "const server = await serve({ model: new URL('./model.mjs', import.meta.url), execution: 'inline' });",
        "const answer = await fetch(server.url + '/v1/infer', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ inputs: [1, 2, 3] }) });",
        'const body = await answer.json();',
        'await server.close();',
        'console.log(answer.status, JSON.stringify(body.outputs));',
      ].join('\n'),
    );
    await run(process.execPath, [tsc, '-p', 'tsconfig.model.json'], { cwd: dir, env: OFFLINE_ENV });
    const { stdout } = await node([join('out-model', 'serve-model.mjs')], dir);
    expect(stdout.trim()).toBe('200 {"y":[2,4,6]}');

    // A datatype the protocol does not have, and an answer that is not an array of outputs, do not compile.
    writeFileSync(
      join(dir, 'wrong-model.mts'),
      [
        "import type { TensorModel } from 'batchline';",
        "export const inputs: TensorModel['inputs'] = [{ name: 'x', datatype: 'FP33', shape: [3] }];",
        "export const execute: TensorModel['execute'] = (items) => items.length;",
      ].join('\n'),
    );
    const checked = await typeErrors('wrong-model.mts');
    expect(checked).toMatch(
      /wrong-model\.mts\(2,\d+\): error TS2322: Type '"FP33"' is not assignable to type 'OipDatatype'/,
    );
    expect(checked).toMatch(
      /wrong-model\.mts\(3,\d+\): error TS2322: Type 'number' is not assignable to type 'CodeModelResults</,
    );
  });
});
