import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';
import { resolveOptions, type OptionSchema } from '../options/schema.js';
import { SIMULATE_OPTIONS, SWEEPABLE_FLAGS, type SimulateOptions } from '../options/simulate.js';

/** One swept option: its flag, its option key and the values to try, in the order given. */
export interface SweepAxis {
  flag: string;
  key: keyof SimulateOptions;
  values: number[];
}

const MAX_GRID_SIZE = 2000;

/**
 * `model-latency-ms`, serve's spelling of the time per batch, is swept as fixed times in ms, as
 * `latency-ms` is (the option itself also takes `5+2n`, which a grid of numbers does not).
 */
const SWEPT_MODEL_LATENCY = { ...SIMULATE_OPTIONS.latencyMs, flag: 'model-latency-ms' } as const;

/**
 * Parses `--sweep max-batch-size=1,2,4 batch-window-ms=0,5` into axes. Each value is validated
 * by the option's own schema, so a sweep accepts exactly what a single run accepts.
 */
export function parseSweep(specs: readonly string[]): SweepAxis[] {
  const axes: SweepAxis[] = [];
  for (const spec of specs.flatMap((s) => s.split(/\s+/)).filter((s) => s !== '')) {
    const [flagText, valuesText, ...rest] = spec.split('=');
    const flag = (flagText ?? '').replace(/^--/, '');
    const entry = Object.entries(SIMULATE_OPTIONS).find(([, option]) => option.flag === flag);
    if (entry === undefined || !(SWEEPABLE_FLAGS as readonly string[]).includes(flag)) {
      invalidOptionValue('--sweep', spec, `option=v1,v2,… with option one of ${SWEEPABLE_FLAGS.join(', ')}`);
    }
    if (valuesText === undefined || valuesText === '' || rest.length > 0) {
      invalidOptionValue('--sweep', spec, `${flag}=v1,v2,…`);
    }
    if (axes.some((axis) => axis.flag === flag))
      throw new BatchlineError('INVALID_OPTION', `--sweep: ${flag} is swept twice`);
    const [key, spec1] = entry;
    const schema: OptionSchema = { [key]: key === 'modelLatencyMs' ? SWEPT_MODEL_LATENCY : spec1 };
    const values = valuesText.split(',').map((text) => {
      const resolved = resolveOptions(schema, { [key]: text }, {}) as Record<string, unknown>;
      return resolved[key] as number;
    });
    axes.push({ flag, key: key as keyof SimulateOptions, values: [...new Set(values)] });
  }
  if (axes.length === 0) throw new BatchlineError('INVALID_OPTION', '--sweep: expected at least one option=v1,v2,…');
  const size = axes.reduce((n, axis) => n * axis.values.length, 1);
  if (size > MAX_GRID_SIZE)
    throw new BatchlineError(
      'INVALID_OPTION',
      `--sweep: the grid has ${size} configurations; at most ${MAX_GRID_SIZE}`,
    );
  return axes;
}

/** Every combination, the first axis varying slowest; each is the values in axis order. */
export function gridPoints(axes: readonly SweepAxis[]): number[][] {
  let points: number[][] = [[]];
  for (const axis of axes) points = points.flatMap((point) => axis.values.map((value) => [...point, value]));
  return points;
}

/** The base options with one grid point applied. */
export function applyPoint(
  base: SimulateOptions,
  axes: readonly SweepAxis[],
  point: readonly number[],
): SimulateOptions {
  const options: Record<string, unknown> = { ...base };
  axes.forEach((axis, i) => {
    // The option holds serve's text (`20`, `5+2n`); its axis, numbers.
    options[axis.key] = axis.key === 'modelLatencyMs' ? String(point[i]) : point[i];
  });
  return options as SimulateOptions;
}
