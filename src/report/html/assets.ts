import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BatchlineError } from '../../errors.js';

/** The page's scripts and styles, as built by `npm run build` into dist/browser/. */
export interface PageAssets {
  css: string;
  /** The renderer with uPlot. */
  reportJs: string;
  /** The timeline and the re-run form with the bundled core (simulate only). */
  timelineJs: string | undefined;
  /** The toy model's panel (simulate only, beside the timeline). */
  modelPanelJs: string | undefined;
}

/**
 * The package's dist/browser/, found from this module whether it runs built (dist/src/…) or
 * from the sources in tests (src/…): the nearest directory above it with a package.json.
 */
function browserAssetsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir)
      throw new BatchlineError('INTERNAL', 'cannot find the batchline package that holds the HTML report scripts');
    dir = parent;
  }
  return join(dir, 'dist', 'browser');
}

export async function loadPageAssets(withTimeline: boolean): Promise<PageAssets> {
  const dir = browserAssetsDir();
  const read = async (name: string): Promise<string> => {
    try {
      return await readFile(join(dir, name), 'utf8');
    } catch {
      throw new BatchlineError('INTERNAL', `the HTML report's ${name} is missing from ${dir}; run npm run build`);
    }
  };
  const [css, reportJs, timelineJs, modelPanelJs] = await Promise.all([
    read('report.css'),
    read('report.js'),
    withTimeline ? read('timeline.js') : Promise.resolve(undefined),
    withTimeline ? read('model-panel.js') : Promise.resolve(undefined),
  ]);
  return { css, reportJs, timelineJs, modelPanelJs };
}
