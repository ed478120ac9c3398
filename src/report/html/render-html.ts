import type { ReportPageData } from './page-data.js';
import { loadPageAssets } from './assets.js';

/** Extra data some pages carry beside the report (the simulation the timeline replays). */
export interface PageExtras {
  /** JSON for the step-through timeline; with it, the timeline script is inlined too. */
  timeline?: unknown;
}

/**
 * One self-contained HTML file: the report's data as JSON, the page's scripts and styles
 * inlined (uPlot, and for a simulation the bundled core), nothing fetched when it is viewed.
 */
export async function renderReportHtml(data: ReportPageData, extras: PageExtras = {}): Promise<string> {
  const assets = await loadPageAssets(extras.timeline !== undefined);
  const parts = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    // Nothing leaves the page: no fetch, no image, no font from elsewhere.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; connect-src 'none'">`,
    `<meta name="generator" content="batchline">`,
    `<title>${escapeHtml(data.title)}</title>`,
    `<style>${assets.css}</style>`,
    '</head>',
    '<body>',
    '<noscript>This report draws its charts with JavaScript; allow scripts for this file to see them.</noscript>',
    '<main id="report"></main>',
    extras.timeline !== undefined ? '<section id="timeline" class="timeline"></section>' : '',
    assets.modelPanelJs !== undefined ? '<section id="model-panel" class="model-panel"></section>' : '',
    `<footer>Made by <code id="generated-by">${escapeHtml(data.generatedBy)}</code> at <span id="generated-at">${escapeHtml(data.generatedAt)}</span>. Charts drawn with uPlot; the page needs no network.</footer>`,
    jsonScript('batchline-data', data),
    extras.timeline !== undefined ? jsonScript('batchline-timeline', extras.timeline) : '',
    inlineScript(assets.reportJs),
    assets.timelineJs !== undefined ? inlineScript(assets.timelineJs) : '',
    assets.modelPanelJs !== undefined ? inlineScript(assets.modelPanelJs) : '',
    '</body>',
    '</html>',
    '',
  ];
  return parts.filter((p) => p !== '').join('\n');
}

/** JSON inside a script element: `<` escaped so no string in it can close the element. */
function jsonScript(id: string, value: unknown): string {
  const json = JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
  return `<script type="application/json" id="${id}">${json}</script>`;
}

/** A script inlined; `</script` cannot appear in it (it would end the element early). */
function inlineScript(code: string): string {
  return `<script>${code.replace(/<\/script/gi, '<\\/script')}</script>`;
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}
