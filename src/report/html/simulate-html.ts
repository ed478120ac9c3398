import type { SimulateOptions } from '../../options/simulate.js';
import type { SimulationInputs } from '../../simulate/prepare.js';
import type { Slo } from '../../simulate/slo.js';
import { applyPoint, type SweepAxis } from '../../simulate/sweep-grid.js';
import type { SweepOutcome } from '../../simulate/sweep-report.js';
import { renderReportHtml } from './render-html.js';
import { simulateForPage } from './simulate-for-page.js';
import { simulationPageData } from './simulation-page.js';
import { sweepPageData } from './sweep-page.js';
import { timelineSeed } from './timeline-seed.js';
import { writeReportFile } from './write-report.js';

/**
 * `simulate --html FILE`: the run's charts (computed here, over every request) and the seed
 * of its step-through timeline, which the page simulates again with the bundled core.
 */
export async function writeSimulationHtml(
  path: string,
  options: SimulateOptions,
  inputs: SimulationInputs,
  slo: Slo | undefined,
  commandLine: string,
): Promise<void> {
  const run = simulateForPage(options, inputs);
  const data = simulationPageData(run, slo, commandLine, new Date().toISOString());
  const html = await renderReportHtml(data, { timeline: timelineSeed(options, inputs, run.report.requests.arrived) });
  await writeReportFile(path, html);
}

/**
 * `simulate --sweep … --html FILE`: the grid's curve and table, and the timeline of the
 * recommended configuration (the first without an objective), simulated again in the page.
 */
export async function writeSweepHtml(
  path: string,
  base: SimulateOptions,
  axes: readonly SweepAxis[],
  inputs: SimulationInputs,
  outcome: SweepOutcome,
  commandLine: string,
): Promise<void> {
  const data = sweepPageData(outcome, commandLine, new Date().toISOString());
  const shown = outcome.choice?.best ?? 0;
  const row = outcome.rows[shown];
  const options = row === undefined ? base : applyPoint(base, axes, row.point);
  const seed = timelineSeed(
    options,
    { ...inputs, given: [...new Set([...inputs.given, ...axes.map((a) => a.key as string)])] },
    row?.report.requests.arrived ?? 0,
  );
  await writeReportFile(path, await renderReportHtml(data, { timeline: seed }));
}
