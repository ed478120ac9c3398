import type { SimulateOptions } from '../../options/simulate.js';
import type { SimulationInputs } from '../../simulate/prepare.js';
import type { Slo } from '../../simulate/slo.js';
import { renderReportHtml } from './render-html.js';
import { simulateForPage } from './simulate-for-page.js';
import { simulationPageData } from './simulation-page.js';
import { timelineSeed } from './timeline-seed.js';
import { writeReportFile } from './write-report.js';

/**
 * `simulate --html FILE`: the run's charts (computed here, over every request) and the seed
 * of its step-through timeline, which the page simulates again with the bundled core.
 */
export async function writeSimulationHtml(path: string, options: SimulateOptions, inputs: SimulationInputs, slo: Slo | undefined, commandLine: string): Promise<void> {
  const run = simulateForPage(options, inputs);
  const data = simulationPageData(run, slo, commandLine, new Date().toISOString());
  const html = await renderReportHtml(data, { timeline: timelineSeed(options, inputs, run.report.requests.arrived) });
  await writeReportFile(path, html);
}
