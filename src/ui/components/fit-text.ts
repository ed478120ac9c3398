/** `text` padded or cut (with `…`) to exactly `width` columns. */
export function fitText(text: string, width: number): string {
  return text.length <= width ? text.padEnd(width) : `${text.slice(0, Math.max(0, width - 1))}…`;
}
