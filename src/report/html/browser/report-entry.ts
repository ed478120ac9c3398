/**
 * The report page's script (bundled with uPlot into dist/browser/report.js): reads the data the
 * page carries and draws it. `window.batchline` lets the timeline script draw again after a
 * re-run, and lets the tests read what was drawn.
 */
import 'uplot/dist/uPlot.min.css';
import './report.css';
import type { ReportPageData } from '../page-data.js';
import type { DrawnChart } from './draw-chart.js';
import { keepChartsSized, renderReport } from './render-page.js';

export interface BatchlinePageApi {
  data: ReportPageData;
  charts: DrawnChart[];
  /** Draws `data` in place of the current report. */
  render(data: ReportPageData): void;
  /** For tests: each chart's id and the values it drew. */
  drawn(): { id: string; points: number; width: number; height: number }[];
}

declare global {
  interface Window {
    batchline: BatchlinePageApi;
  }
}

function start(): void {
  const source = document.getElementById('batchline-data');
  const root = document.getElementById('report');
  if (source === null || root === null) throw new Error('the page carries no report data');
  const api: BatchlinePageApi = {
    data: JSON.parse(source.textContent ?? 'null') as ReportPageData,
    charts: [],
    render(data) {
      api.data = data;
      api.charts = renderReport(root, data, api.charts);
      // The footer names what made the charts shown: after a run in the page, that run.
      const by = document.getElementById('generated-by');
      const at = document.getElementById('generated-at');
      if (by !== null) by.textContent = data.generatedBy;
      if (at !== null) at.textContent = data.generatedAt;
    },
    drawn: () =>
      api.charts.map((c) => ({ id: c.spec.id, points: c.points, width: c.plot.width, height: c.plot.height })),
  };
  window.batchline = api;
  api.render(api.data);
  keepChartsSized(() => api.charts);
}

start();
