/**
 * The simulate report's timeline script (bundled with batchline's core into
 * dist/browser/timeline.js): it simulates the report's run again in the page with the same
 * core, steps through its events, and re-runs it from the form.
 */
import type { CoreEvent } from '../../../core/event-log.js';
import type { SimulateOptions } from '../../../options/simulate.js';
import { formatEvents } from '../../../simulate/events-text.js';
import type { SimulationInputs } from '../../../simulate/prepare.js';
import type { SimulationReport } from '../../../simulate/report.js';
import { parseSlo } from '../../../simulate/slo.js';
import { simulateForPage } from '../simulate-for-page.js';
import { simulationPageData } from '../simulation-page.js';
import { inputsOfSeed, PAGE_AUTO_RUN_ARRIVALS, PAGE_EVENT_LIMIT, type TimelineSeed } from '../timeline-seed.js';
import { el } from './dom.js';
import { RerunForm, type FormRun } from './rerun-form.js';
import { TimelineView } from './timeline-view.js';

export interface TimelineApi {
  /** Runs the form's configuration; returns false (and shows why) when it is invalid. */
  run(): boolean;
  form: RerunForm;
  events(): readonly CoreEvent[];
  /** The events as `simulate --events` prints them. */
  eventsText(): string;
  report(): SimulationReport | undefined;
  view: TimelineView;
  error(): string | undefined;
}

declare global {
  interface Window {
    batchlineTimeline: TimelineApi;
  }
}

function start(): void {
  const host = document.getElementById('timeline');
  const source = document.getElementById('batchline-timeline');
  if (host === null || source === null) return;
  const seed = JSON.parse(source.textContent ?? 'null') as TimelineSeed;
  const form = new RerunForm(seed);
  const view = new TimelineView();
  const error = el('div', { class: 'error', role: 'alert' });
  const command = el('code', {});
  const download = el('a', { download: 'arrivals.txt', hidden: '' }, 'arrivals.txt');
  const runButton = el('button', { type: 'submit' }, 'Run in this page');
  const resetButton = el('button', { type: 'button' }, 'Back to the report’s run');
  form.element.append(
    el(
      'div',
      { class: 'actions' },
      runButton,
      resetButton,
      el('span', {}, 'the same run on the command line: ', command, ' ', download),
      error,
    ),
  );

  let events: readonly CoreEvent[] = [];
  let report: SimulationReport | undefined;
  let lastError: string | undefined;

  const execute = (
    run: FormRun | { options: SimulateOptions; inputs: SimulationInputs; command: string; arrivalsText: undefined },
    rerun: boolean,
  ): void => {
    const started = performance.now();
    const result = simulateForPage(run.options, run.inputs, PAGE_EVENT_LIMIT);
    events = result.events ?? [];
    report = result.report;
    const slo = run.options.slo === undefined ? undefined : parseSlo(run.options.slo);
    if (rerun) {
      const data = simulationPageData(result, slo, `${run.command} (run in the page)`, new Date().toISOString());
      window.batchline.render(data);
    }
    const tookMs = performance.now() - started;
    const cut = result.eventsTruncated
      ? ` The run had more events than the page keeps: the timeline shows its first ${PAGE_EVENT_LIMIT.toLocaleString('en-US')}.`
      : '';
    view.load(
      events,
      {
        maxQueueSize: run.options.maxQueueSize,
        instances: run.options.instances,
        maxBatchSize: run.options.maxBatchSize,
        batchWindowMs: run.options.batchWindowMs,
      },
      `${result.report.requests.arrived.toLocaleString('en-US')} requests, ${events.length.toLocaleString('en-US')} events, simulated in this page in ${tookMs.toFixed(0)} ms with batchline's own core.${cut}`,
    );
    command.textContent = run.command;
    if (run.arrivalsText !== undefined) {
      download.href = URL.createObjectURL(new Blob([run.arrivalsText], { type: 'text/plain' }));
      download.hidden = false;
    } else download.hidden = true;
  };

  const runForm = (): boolean => {
    try {
      execute(form.read(), true);
      lastError = undefined;
      error.textContent = '';
      return true;
    } catch (e) {
      lastError = (e as Error).message;
      error.textContent = lastError;
      return false;
    }
  };
  form.element.addEventListener('submit', (e) => {
    e.preventDefault();
    runForm();
  });
  resetButton.addEventListener('click', () => form.reset());

  host.append(
    el('h2', {}, 'Step through the run'),
    el(
      'p',
      { class: 'counts' },
      'Every admission, batch start, completion, rejection and expiry of the simulation, in order, as `batchline simulate --events` prints them — computed here by batchline’s own core (src/core), bundled into this page. Same-time events run in the core’s order: completions, expiries, window closings, arrivals.',
    ),
    form.element,
    view.element,
  );

  const own = {
    options: seed.options,
    inputs: inputsOfSeed(seed),
    command: form.read().command,
    arrivalsText: undefined,
  };
  if (seed.arrived <= PAGE_AUTO_RUN_ARRIVALS) execute(own, false);
  else
    view.load(
      [],
      {
        maxQueueSize: seed.options.maxQueueSize,
        instances: seed.options.instances,
        maxBatchSize: seed.options.maxBatchSize,
        batchWindowMs: seed.options.batchWindowMs,
      },
      `This run has ${seed.arrived.toLocaleString('en-US')} requests; the charts above cover all of them. Press “Run in this page” to simulate it here too (the timeline keeps the first ${PAGE_EVENT_LIMIT.toLocaleString('en-US')} events), or lower --requests first.`,
    );

  window.batchlineTimeline = {
    run: runForm,
    form,
    events: () => events,
    eventsText: () => formatEvents(events),
    report: () => report,
    view,
    error: () => lastError,
  };
}

start();
