/** A horizontal bar of `width` cells filled to `fraction` in eighths, padded with `empty`. */
export function barText(fraction: number, width: number, empty = ' '): string {
  if (width <= 0) return '';
  const clamped = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
  const eighths = Math.round(clamped * width * 8);
  const full = Math.floor(eighths / 8);
  const rest = eighths % 8;
  const partial = rest === 0 ? '' : (['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'][rest] as string);
  return ('█'.repeat(full) + partial).padEnd(width, empty);
}
