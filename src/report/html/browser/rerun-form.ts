import { resolveOptions, type OptionSpec } from '../../../options/schema.js';
import { SIMULATE_OPTIONS, type SimulateOptions } from '../../../options/simulate.js';
import { parseArrivals } from '../../../simulate/arrivals-file.js';
import type { SimulationInputs } from '../../../simulate/prepare.js';
import { shellWord } from '../command-line.js';
import type { TimelineSeed } from '../timeline-seed.js';
import { el } from './dom.js';

/** Options that write files or pick a terminal view: no meaning in the page. */
const NOT_IN_FORM = new Set(['json', 'csv', 'trace', 'events', 'step', 'html', 'arrivals', 'latencyProfile']);
const ARRIVALS_FILE = 'arrivals.txt';

/** What the form asks for, ready for `simulateForPage`, and the same run as a command. */
export interface FormRun {
  options: SimulateOptions;
  inputs: SimulationInputs;
  command: string;
  /** The arrival times typed, one a line, when there are some (for `--arrivals arrivals.txt`). */
  arrivalsText: string | undefined;
}

/**
 * The re-run form, made from simulate's own option schema (so a new option shows up here by
 * itself), validated by the same `resolveOptions` as the command line: the same names, the same
 * ranges, the same messages. Arrival times can be typed instead of generated.
 */
export class RerunForm {
  readonly element: HTMLFormElement;
  private readonly inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  private readonly arrivals: HTMLTextAreaElement;
  private readonly profile: HTMLInputElement | undefined;

  constructor(private readonly seed: TimelineSeed) {
    const fields = el('div', { class: 'fields' });
    for (const [key, spec] of Object.entries(SIMULATE_OPTIONS) as [string, OptionSpec][]) {
      if (NOT_IN_FORM.has(key)) continue;
      const input =
        spec.kind === 'enum'
          ? selectFor(spec)
          : el('input', {
              type: 'text',
              name: key,
              placeholder: spec.default === undefined ? '' : String(spec.default),
              spellcheck: 'false',
            });
      input.title = spec.description;
      this.inputs.set(key, input);
      fields.append(el('label', { title: spec.description }, `--${spec.flag}`, input));
    }
    this.arrivals = el('textarea', {
      name: 'arrivals',
      placeholder:
        'arrival times in ms, one a line or separated by spaces (empty: generate them from --rate or --stages)',
      spellcheck: 'false',
    });
    const extra: HTMLElement[] = [
      el('label', { class: 'wide' }, 'arrival times (ms), instead of --rate / --stages', this.arrivals),
    ];
    if (seed.profile !== undefined) {
      this.profile = el('input', { type: 'checkbox', name: 'latencyProfile' });
      extra.push(
        el('label', {}, el('span', {}, this.profile, ` service time from the profile ${seed.profileSource ?? ''}`)),
      );
    }
    this.element = el(
      'form',
      { class: 'rerun', id: 'rerun-form' },
      el(
        'div',
        { class: 'lane-title' },
        'Change the configuration or the arrivals and run it again here, on the same core:',
      ),
      fields,
      ...extra,
    );
    this.reset();
  }

  /**
   * Back to the run of the report: every option given, and every one an environment variable
   * set (it differs from its default but is not in `given`), so that the command shown runs
   * the same where that variable is not set.
   */
  reset(): void {
    for (const [key, input] of this.inputs) {
      const spec = (SIMULATE_OPTIONS as Record<string, OptionSpec>)[key] as OptionSpec;
      const value = (this.seed.options as Record<string, unknown>)[key];
      const shown = value !== undefined && (this.seed.given.includes(key) || value !== spec.default);
      input.value = shown ? formText(spec, value) : '';
    }
    this.arrivals.value =
      this.seed.given.includes('arrivals') && this.seed.arrivalTimes !== undefined
        ? this.seed.arrivalTimes.join('\n')
        : '';
    if (this.profile !== undefined) this.profile.checked = this.seed.given.includes('latencyProfile');
  }

  /** Sets one field by option key (`maxBatchSize`) or `arrivals`; for tests and links. */
  set(key: string, value: string): void {
    if (key === 'arrivals') this.arrivals.value = value;
    else if (this.inputs.has(key)) (this.inputs.get(key) as HTMLInputElement).value = value;
    else throw new Error(`the form has no field ${key}`);
  }

  /** Reads and validates the form; throws BatchlineError with the CLI's message on a bad value. */
  read(): FormRun {
    const raw: Record<string, string> = {};
    for (const [key, input] of this.inputs) if (input.value.trim() !== '') raw[key] = input.value.trim();
    const given = Object.keys(raw);
    const inputs: SimulationInputs = { given };
    let arrivalsText: string | undefined;
    if (this.arrivals.value.trim() !== '') {
      const text = this.arrivals.value.trim();
      // One time a line as the CLI reads a file; spaces and commas also separate typed times.
      arrivalsText = /^[[{]/.test(text)
        ? text
        : `${text
            .split(/[\s,;]+/)
            .filter((t) => t !== '')
            .join('\n')}\n`;
      inputs.arrivalTimes = parseArrivals(arrivalsText, ARRIVALS_FILE);
      inputs.arrivalsSource = ARRIVALS_FILE;
      raw.arrivals = ARRIVALS_FILE;
      given.push('arrivals');
    }
    if (this.profile?.checked === true && this.seed.profile !== undefined) {
      inputs.profile = this.seed.profile;
      inputs.profileSource = this.seed.profileSource ?? 'profile.json';
      raw.latencyProfile = inputs.profileSource;
      given.push('latencyProfile');
    }
    const options = resolveOptions(SIMULATE_OPTIONS, raw, {});
    const flags = given.flatMap((key) => {
      const spec = (SIMULATE_OPTIONS as Record<string, OptionSpec>)[key];
      if (spec === undefined) return [`--${key} ${shellWord(raw[key] as string)}`];
      // A switch takes no value: --pipeline, --no-pipeline, or nothing for an off that is the default.
      if (spec.kind === 'boolean') {
        if ((options as Record<string, unknown>)[key] === true) return [`--${spec.flag}`];
        return spec.negatable === true ? [`--no-${spec.flag}`] : [];
      }
      return [`--${spec.flag} ${shellWord(raw[key] as string)}`];
    });
    return { options, inputs, command: ['batchline simulate', ...flags, '--events'].join(' '), arrivalsText };
  }
}

/** An option's resolved value as the form takes it back: a duration in ms with its unit (a bare number is seconds). */
function formText(spec: OptionSpec, value: unknown): string {
  if (spec.kind === 'duration') return `${value as number}ms`;
  return String(value);
}

function selectFor(spec: OptionSpec & { kind: 'enum' }): HTMLSelectElement {
  const select = el('select', {});
  select.append(el('option', { value: '' }, `${spec.default} (default)`));
  for (const choice of spec.choices) select.append(el('option', { value: choice }, choice));
  return select;
}
