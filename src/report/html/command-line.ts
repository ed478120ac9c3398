/** Quotes one shell word when it needs it, so the page's footer shows a command that pastes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `batchline simulate --rate 300 --html r.html`, from the process's arguments. */
export function commandLineOf(argv: readonly string[]): string {
  return ['batchline', ...argv.slice(2).map(shellWord)].join(' ');
}
