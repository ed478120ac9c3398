import type { ReportPageData } from '../page-data.js';
import { drawChart, type DrawnChart } from './draw-chart.js';
import { el } from './dom.js';

/**
 * Renders the report's summary and charts into `root`, replacing what was there (a re-run in
 * the page renders again). Returns the charts drawn.
 */
export function renderReport(
  root: HTMLElement,
  data: ReportPageData,
  previous: readonly DrawnChart[] = [],
): DrawnChart[] {
  for (const chart of previous) chart.plot.destroy();
  root.replaceChildren();
  root.append(
    el('header', {}, el('h1', {}, data.title), el('p', { class: 'subtitle' }, data.subtitle)),
    el(
      'section',
      { class: 'facts' },
      ...data.facts.map((f) =>
        el('div', { class: 'fact' }, el('div', { class: 'value' }, f.value), el('div', { class: 'label' }, f.label)),
      ),
    ),
  );
  if (data.warnings.length > 0)
    root.append(el('ul', { class: 'warnings' }, ...data.warnings.map((w) => el('li', {}, w))));
  if (data.tables.length > 0) root.append(el('section', { class: 'tables' }, ...data.tables.map(renderTable)));

  const grid = el('section', { class: 'charts' });
  root.append(grid);
  const drawn: DrawnChart[] = [];
  for (const spec of data.charts) {
    const plotHost = el('div', { class: 'plot' });
    const figure = el(
      'figure',
      { class: 'chart', id: `chart-${spec.id}`, 'data-chart-id': spec.id },
      el('h2', {}, spec.title),
      plotHost,
      el('figcaption', {}, spec.note),
    );
    grid.append(figure);
    const chart = drawChart(plotHost, spec);
    figure.dataset.points = String(chart.points);
    drawn.push(chart);
  }
  for (const missing of data.missing) {
    grid.append(el('figure', { class: 'chart missing' }, el('h2', {}, missing.title), el('p', {}, missing.why)));
  }
  return drawn;
}

function renderTable(table: ReportPageData['tables'][number]): HTMLElement {
  return el(
    'table',
    {},
    el('caption', {}, table.title),
    el('thead', {}, el('tr', {}, ...table.head.map((h) => el('th', {}, h)))),
    el(
      'tbody',
      {},
      ...table.rows.map((row) => el('tr', {}, ...row.map((cell, i) => el(i === 0 ? 'th' : 'td', {}, cell)))),
    ),
  );
}

/** Keeps every chart as wide as its box when the window changes. */
export function keepChartsSized(charts: () => readonly DrawnChart[]): void {
  let pending = false;
  window.addEventListener('resize', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      for (const chart of charts()) {
        const host = chart.plot.root.parentElement;
        if (host !== null) chart.plot.setSize({ width: Math.max(320, host.clientWidth), height: chart.plot.height });
      }
    });
  });
}
