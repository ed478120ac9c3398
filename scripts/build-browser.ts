/**
 * Bundles the code that runs inside the HTML reports (part of `npm run build`, after tsc):
 * - `dist/browser/report.js` + `report.css`: the page's renderer with uPlot;
 * - `dist/browser/timeline.js`: the step-through timeline and the re-run form, with batchline's
 *   own core (`src/core`) and simulator bundled for the browser;
 * - `dist/browser/model-panel.js`: the embedded toy model run in the page, with serve's input
 *   checks (`src/model`).
 * The HTML writer inlines these files, so a report needs no network when viewed.
 *
 * The core must stay free of Node: an import of a Node module from a file of `src/core` that a
 * bundle reaches fails the build (`real-clock.ts`, serve's clock, imports `node:perf_hooks`; no page reaches it).
 * Elsewhere a Node import is replaced by a stub that throws, and the build fails if a stub is
 * still in a bundle after tree shaking (the page would break where it is called).
 */
import { mkdir } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';

const root = fileURLToPath(new URL('../..', import.meta.url));
const outDir = join(root, 'dist', 'browser');
const NODE_MODULES = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
const STUB_NAMESPACE = 'node-stub';
/** Names the stubs export: what the simulator's file readers import from Node. */
const STUBBED_NAMES = [
  'readFile',
  'open',
  'constants',
  'writeFile',
  'mkdir',
  'stat',
  'existsSync',
  'readFileSync',
  'fileURLToPath',
  'availableParallelism',
  'Worker',
  'join',
  'dirname',
];

const ENTRIES = {
  report: 'src/report/html/browser/report-entry.ts',
  timeline: 'src/report/html/browser/timeline-entry.ts',
  'model-panel': 'src/report/html/browser/model-panel-entry.ts',
};

function nodeImports(): Plugin {
  return {
    name: 'batchline-node-imports',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!NODE_MODULES.has(args.path)) return undefined;
        const from = relative(root, args.importer).split(sep).join('/');
        if (from.startsWith('src/core/')) {
          return {
            errors: [
              {
                text: `src/core must stay free of Node: ${from} imports '${args.path}' (the HTML report bundles the core for the browser)`,
              },
            ],
          };
        }
        return { path: args.path, namespace: STUB_NAMESPACE };
      });
      // An ES module of pure declarations: tree shaking drops it with the code that imports it.
      b.onLoad({ filter: /.*/, namespace: STUB_NAMESPACE }, (args) => ({
        contents: [
          `const unavailable = () => { throw new Error(${JSON.stringify(`${args.path} is not available in the page`)}); };`,
          `export { ${STUBBED_NAMES.map((name) => `unavailable as ${name}`).join(', ')} };`,
          'export default {};',
        ].join('\n'),
        loader: 'js',
      }));
    },
  };
}

/** Stubbed Node modules that tree shaking left in an output. */
function stubsIn(output: Metafile['outputs'][string]): string[] {
  return Object.keys(output.inputs).filter((input) => input.startsWith(`${STUB_NAMESPACE}:`));
}

async function main(): Promise<void> {
  await mkdir(outDir, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: ENTRIES,
    outdir: outDir,
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome100', 'firefox100', 'safari15'],
    minify: true,
    legalComments: 'inline',
    metafile: true,
    logLevel: 'warning',
    plugins: [nodeImports()],
  });
  for (const [output, meta] of Object.entries(result.metafile.outputs)) {
    const stubs = stubsIn(meta);
    if (stubs.length > 0)
      throw new Error(
        `${output} still needs Node modules (${stubs.join(', ')}); keep them out of the page's code paths`,
      );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`build-browser: ${(error as Error).message}\n`);
  process.exit(1);
});
