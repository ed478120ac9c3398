import type { Lane, Lanes } from './request-lanes.js';
import type { TimelinePosition } from './timeline-cursor.js';

const ROW_PX = 14;
const GUTTER_PX = 56;
const AXIS_PX = 22;
const COLORS = {
  wait: '#d4a72c',
  run: '#1f6feb',
  ok: '#2da44e',
  bad: '#cf222e',
  now: '#1d2329',
  text: '#5b6570',
  grid: '#eaeef2',
  hot: '#0969da22',
};

/**
 * The requests around the current event as bars on a time axis, drawn up to "now" only (the
 * future stays hidden, so a step shows only what the batcher knew then): waiting in amber from arrival to batch start,
 * running in blue to the answer, a green end for ok, red for an expiry, a red × for a rejection.
 * Only the rows on screen are drawn, so a run of any length costs the same per step.
 */
export function drawGantt(canvas: HTMLCanvasElement, lanes: Lanes, position: TimelinePosition): number {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const ctx = canvas.getContext('2d') as CanvasRenderingContext2D;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = '11px system-ui, sans-serif';

  const rows = Math.max(1, Math.floor((height - AXIS_PX - 4) / ROW_PX));
  const current = position.index - 1;
  const arrived = arrivedBy(lanes.lanes, current);
  if (arrived === 0) {
    ctx.fillStyle = COLORS.text;
    ctx.fillText('no request has arrived yet', GUTTER_PX, 20);
    return 0;
  }
  const focus =
    position.subjects.length > 0 ? (lanes.indexOf.get(position.subjects[0] as string) ?? arrived - 1) : arrived - 1;
  const first = Math.max(0, Math.min(focus - Math.floor(rows * 0.6), arrived - rows));
  const visible = lanes.lanes.slice(first, Math.min(arrived, first + rows));
  const nowMs = position.atMs;
  const fromMs = Math.min(...visible.map((l) => l.arrivalMs));
  const spanMs = Math.max(nowMs - fromMs, 1e-3);
  const x0 = fromMs - spanMs * 0.04;
  const x1 = nowMs + spanMs * 0.12;
  const plotWidth = width - GUTTER_PX - 8;
  const xOf = (ms: number): number => GUTTER_PX + ((ms - x0) / (x1 - x0)) * plotWidth;
  const subjects = new Set(position.subjects);

  drawAxis(ctx, x0, x1, xOf, height);
  visible.forEach((lane, row) => {
    const y = 4 + row * ROW_PX;
    if (subjects.has(lane.id)) {
      ctx.fillStyle = COLORS.hot;
      ctx.fillRect(0, y - 1, width, ROW_PX);
    }
    ctx.fillStyle = COLORS.text;
    ctx.fillText(lane.id.length > 8 ? `…${lane.id.slice(-7)}` : lane.id, 4, y + ROW_PX - 4);
    drawLane(ctx, lane, current, nowMs, xOf, y);
  });
  ctx.strokeStyle = COLORS.now;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(xOf(nowMs), 0);
  ctx.lineTo(xOf(nowMs), height - AXIS_PX);
  ctx.stroke();
  return visible.length;
}

function drawLane(
  ctx: CanvasRenderingContext2D,
  lane: Lane,
  current: number,
  nowMs: number,
  xOf: (ms: number) => number,
  y: number,
): void {
  const barY = y + 2;
  const barH = ROW_PX - 5;
  const x = xOf(lane.arrivalMs);
  if (lane.rejected !== undefined) {
    ctx.strokeStyle = COLORS.bad;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(x - 4, barY);
    ctx.lineTo(x + 4, barY + barH);
    ctx.moveTo(x + 4, barY);
    ctx.lineTo(x - 4, barY + barH);
    ctx.stroke();
    return;
  }
  const started = lane.startEvent !== undefined && lane.startEvent <= current;
  const ended = lane.endEvent !== undefined && lane.endEvent <= current;
  const waitEnd = started ? (lane.startMs as number) : ended ? (lane.endMs as number) : nowMs;
  ctx.fillStyle = COLORS.wait;
  ctx.fillRect(x, barY, Math.max(2, xOf(waitEnd) - x), barH);
  if (started) {
    const runEnd = ended ? (lane.endMs as number) : nowMs;
    ctx.fillStyle = COLORS.run;
    ctx.fillRect(xOf(lane.startMs as number), barY, Math.max(2, xOf(runEnd) - xOf(lane.startMs as number)), barH);
  }
  if (ended) {
    ctx.fillStyle = lane.outcome === 'ok' ? COLORS.ok : COLORS.bad;
    ctx.fillRect(xOf(lane.endMs as number) - 2, barY - 1, 4, barH + 2);
  }
}

function drawAxis(
  ctx: CanvasRenderingContext2D,
  x0: number,
  x1: number,
  xOf: (ms: number) => number,
  height: number,
): void {
  const step = niceStep((x1 - x0) / 6);
  ctx.strokeStyle = COLORS.grid;
  ctx.fillStyle = COLORS.text;
  ctx.lineWidth = 1;
  for (let t = Math.ceil(x0 / step) * step; t <= x1; t += step) {
    const x = xOf(t);
    ctx.beginPath();
    ctx.moveTo(x, 0);
    ctx.lineTo(x, height - AXIS_PX);
    ctx.stroke();
    ctx.fillText(`${Number(t.toPrecision(6))} ms`, x - 12, height - 6);
  }
}

/** How many lanes arrived at or before event `current` (lanes are in arrival order). */
function arrivedBy(lanes: readonly Lane[], current: number): number {
  let lo = 0;
  let hi = lanes.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((lanes[mid] as Lane).arrivalEvent <= current) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function niceStep(raw: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].find((m) => m * magnitude >= raw) as number) * magnitude;
}
