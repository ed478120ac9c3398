import uPlot from 'uplot';
import type { ChartSeries, ChartSpec } from '../page-data.js';
import { percentileLabel, percentileSplits } from './percentile-axis.js';

const HEIGHT = 260;

/** A drawn chart: what the tests read back, and how the page resizes or removes it. */
export interface DrawnChart {
  spec: ChartSpec;
  plot: uPlot;
  /** Values drawn (non-null, over every series). */
  points: number;
}

/** Draws one chart into `host` (which it fills) and keeps it as wide as its host. */
export function drawChart(host: HTMLElement, spec: ChartSpec): DrawnChart {
  const data = [spec.x.values, ...spec.series.map((s) => s.values)] as uPlot.AlignedData;
  const options: uPlot.Options = {
    width: Math.max(320, host.clientWidth),
    height: HEIGHT,
    scales: {
      x: xScale(spec),
      y:
        spec.y.log === true
          ? { distr: 3, log: 10 }
          : { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.05 : 1] },
      ...(spec.y2 !== undefined
        ? { y2: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.05 : 1] } }
        : {}),
    },
    axes: [
      xAxis(spec),
      { label: spec.y.label, size: 60, values: (_u, splits) => splits.map(tickText) },
      ...(spec.y2 !== undefined
        ? [
            {
              label: spec.y2.label,
              scale: 'y2',
              side: 1,
              size: 60,
              grid: { show: false },
              values: (_u: uPlot, splits: number[]) => splits.map(tickText),
            },
          ]
        : []),
    ],
    series: [
      { label: spec.x.label, value: (_u, v) => (v === null ? '–' : xValueText(spec, v)) },
      ...spec.series.map(seriesOptions),
    ],
    cursor: { points: { size: 7 } },
    legend: { live: true },
    plugins: [markersPlugin(spec), pointLabelsPlugin(spec)],
  };
  const plot = new uPlot(options, data, host);
  const points = spec.series.reduce(
    (sum, s) => sum + s.values.filter((v) => v !== null && Number.isFinite(v)).length,
    0,
  );
  return { spec, plot, points };
}

function xScale(spec: ChartSpec): uPlot.Scale {
  if (spec.x.scale === 'percentile') return { time: false, distr: 3, log: 10 };
  if (spec.series.some((s) => s.style === 'bars')) {
    // Half a bar of room at each end, so the first and the last bar are drawn whole.
    const xs = spec.x.values;
    const half = xs.length > 1 ? ((xs.at(-1) as number) - (xs[0] as number)) / (xs.length - 1) / 2 : 0.5;
    return { time: false, range: (_u, min, max) => [min - half, max + half] };
  }
  return { time: false };
}

function xAxis(spec: ChartSpec): uPlot.Axis {
  if (spec.x.scale === 'percentile') {
    return {
      label: spec.x.label,
      splits: (_u, _axis, min, max) => percentileSplits(min, max),
      values: (_u, splits) => splits.map(percentileLabel),
    };
  }
  return { label: spec.x.label, values: (_u, splits) => splits.map((v) => xValueText(spec, v)) };
}

function xValueText(spec: ChartSpec, v: number): string {
  if (spec.x.scale === 'percentile') return percentileLabel(v);
  if (spec.x.scale === 'seconds') return `${tickText(v)} s`;
  return tickText(v);
}

/** Short tick text: 0.25, 12, 1.5k, 2M. */
function tickText(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return '';
  const abs = Math.abs(v);
  if (abs >= 1e6) return `${trim(v / 1e6)}M`;
  if (abs >= 1e4) return `${trim(v / 1e3)}k`;
  return trim(v);
}

function trim(v: number): string {
  return String(Number(v.toPrecision(4)));
}

function seriesOptions(s: ChartSeries): uPlot.Series {
  const base: uPlot.Series = {
    label: s.label,
    stroke: s.color,
    width: 1.5,
    spanGaps: s.spanGaps === true,
    value: (_u, v) => (v === null ? '–' : tickText(v)),
    ...(s.rightAxis === true ? { scale: 'y2' } : {}),
    ...(s.dash === true ? { dash: [6, 4] } : {}),
  };
  switch (s.style ?? 'line') {
    case 'points':
      return { ...base, paths: () => null, points: { show: true, size: 8, fill: s.color, stroke: s.color } };
    case 'bars':
      return { ...base, fill: `${s.color}99`, paths: uPlot.paths.bars?.({ size: [0.8, 60] }), points: { show: false } };
    case 'step':
      return { ...base, paths: uPlot.paths.stepped?.({ align: 1 }), points: { show: false, filter: loneValues(s) } };
    default:
      // Markers only where there are few points; a long series reads as a line.
      return { ...base, points: { show: (u: uPlot) => u.data[0].length < 60, filter: loneValues(s) } };
  }
}

/**
 * The points a line cannot show: values with a gap on both sides (one answer in an hour-long
 * drain, a single request) draw no segment, so they get a marker whatever the series' length.
 */
function loneValues(s: ChartSeries): uPlot.Series.Points.Filter {
  return (_u, _seriesIdx, show) => {
    if (show || s.spanGaps === true) return null;
    const v = s.values;
    const lone: number[] = [];
    for (let i = 0; i < v.length; i++)
      if (v[i] !== null && (i === 0 || v[i - 1] === null) && (i === v.length - 1 || v[i + 1] === null)) lone.push(i);
    return lone.length > 0 ? lone : null;
  };
}

/** Vertical lines with a label at the top: the end of a warm-up, a stop. */
function markersPlugin(spec: ChartSpec): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = '#888';
          ctx.fillStyle = '#555';
          ctx.setLineDash([4, 4]);
          ctx.font = `${11 * devicePixelRatio}px sans-serif`;
          for (const marker of spec.markers ?? []) {
            const x = Math.round(u.valToPos(marker.x, 'x', true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.fillText(marker.label, x + 4 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
          }
          ctx.restore();
        },
      ],
    },
  };
}

/** Labels beside the points of the first series that has a value at each labelled x. */
function pointLabelsPlugin(spec: ChartSpec): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u) => {
          const labels = spec.pointLabels;
          if (labels === undefined) return;
          const ctx = u.ctx;
          ctx.save();
          ctx.fillStyle = '#333';
          ctx.font = `${10 * devicePixelRatio}px sans-serif`;
          labels.forEach((label, i) => {
            if (label === null) return;
            const series = spec.series.findIndex((s) => s.values[i] !== null && s.values[i] !== undefined);
            if (series < 0) return;
            const value = spec.series[series]?.values[i] as number;
            const x = u.valToPos(spec.x.values[i] as number, 'x', true);
            const y = u.valToPos(value, spec.series[series]?.rightAxis === true ? 'y2' : 'y', true);
            ctx.fillText(label, x + 6 * devicePixelRatio, y - 6 * devicePixelRatio);
          });
          ctx.restore();
        },
      ],
    },
  };
}
