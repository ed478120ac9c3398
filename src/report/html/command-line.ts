/**
 * Quotes one shell word when it needs it, so the page shows a command that pastes: bash and zsh
 * read it back as it was. A word with a control character (a newline) is written as `$'…'`
 * with escapes, on one line: a page renders a newline as a space, and the space is what a
 * reader copies.
 */
export function shellWord(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  if (!/[\x00-\x1f\x7f]/.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`;
  const escaped = word.replace(/[\\'\x00-\x1f\x7f]/g, (c) => {
    const named: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\n': '\\n', '\t': '\\t', '\r': '\\r' };
    return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
  return `$'${escaped}'`;
}

/** `batchline simulate --rate 300 --html r.html`, from the process's arguments. */
export function commandLineOf(argv: readonly string[]): string {
  return ['batchline', ...argv.slice(2).map(shellWord)].join(' ');
}
