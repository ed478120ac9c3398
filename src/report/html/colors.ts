/** One colour per meaning, the same in every report page. */
export const COLORS = {
  p50: '#1f6feb',
  p99: '#cf222e',
  max: '#8250df',
  ok: '#2da44e',
  offered: '#57606a',
  rejected: '#cf222e',
  expired: '#bf8700',
  failed: '#8250df',
  batch: '#1f6feb',
  limit: '#57606a',
  queue: '#bf8700',
};

/** Colours for several runs on one chart (sweep steps, A and B). */
export const PALETTE = ['#1f6feb', '#cf222e', '#2da44e', '#8250df', '#bf8700', '#0a7ea4', '#d63384', '#57606a'];
