/**
 * A JSON Schema `pattern` (or `patternProperties` key) that repeats a group made only of
 * repetitions, as `^(a+)+$`, `(\w+\s?)*` or `(x+x+)+y`: V8 backtracks through every way of
 * splitting a string that fails to match among the repetitions, which doubles with each
 * character (`^(a+)+$` against 28 a's and a b: 1.3 s of the main thread, where ajv checks a
 * request's item before the queue; 40 characters: days). V8's linear engine takes none of these
 * under the `u` flag ajv compiles with, and no RE2 is among batchline's dependencies, so such a
 * pattern is refused at load, naming it. A heuristic: it catches the nested repetitions, not the
 * alternatives that overlap (`(a|aa)+`); a repeated group with a part that must match once (the
 * `-` of `(-[a-z]+)*`) passes, as such groups split a string one way only when that part is a
 * character the repetitions do not take (which this does not check: `(a+a)+` passes too).
 */
export function catastrophicPattern(source: string): boolean {
  let atoms: Sequence[];
  try {
    atoms = new PatternReader(source).alternatives();
  } catch {
    return false; // not ours to judge: ajv refuses a pattern it cannot compile
  }
  return atoms.some(hasCatastrophicGroup);
}

/** Keywords whose values are data, never run as schemas: a `pattern` key inside one is no pattern. */
const DATA_KEYWORDS = new Set(['default', 'examples', 'enum', 'const']);
/** Keywords whose values map names (any, `default` too) to schemas. */
const SCHEMA_MAPS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'dependencies',
]);

/** Where a schema holds patterns: `pattern` strings and `patternProperties` keys, with their JSON pointers. */
export function schemaPatterns(schema: unknown, at = ''): { pointer: string; pattern: string }[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const found: { pointer: string; pattern: string }[] = [];
  for (const [key, value] of Object.entries(schema)) {
    const pointer = `${at}/${pointerToken(key)}`;
    if (!Array.isArray(schema) && DATA_KEYWORDS.has(key)) continue;
    if (key === 'pattern' && typeof value === 'string') found.push({ pointer, pattern: value });
    if (key === 'patternProperties' && typeof value === 'object' && value !== null && !Array.isArray(value))
      for (const name of Object.keys(value)) found.push({ pointer: `${pointer}/${pointerToken(name)}`, pattern: name });
    if (!Array.isArray(schema) && SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null)
      for (const [name, child] of Object.entries(value))
        found.push(...schemaPatterns(child, `${pointer}/${pointerToken(name)}`));
    else found.push(...schemaPatterns(value, pointer));
  }
  return found;
}

function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

interface Atom {
  /** min and max repetitions (1, 1 without a quantifier; max Infinity for `*`, `+`, `{n,}`). */
  readonly min: number;
  readonly max: number;
  /** Zero-width (`^`, `$`, `\b`, a lookaround): matches no character. */
  readonly zeroWidth: boolean;
  /** A group's alternatives. */
  readonly alternatives?: Sequence[];
}
type Sequence = Atom[];

function hasCatastrophicGroup(sequence: Sequence): boolean {
  return sequence.some(
    (atom) =>
      atom.alternatives !== undefined &&
      ((atom.max > 1 && atom.alternatives.some(onlyRepetitions)) || atom.alternatives.some(hasCatastrophicGroup)),
  );
}

/** Every atom of the sequence repeats without bound (and there is one), but the optional (`?`) and zero-width ones. */
function onlyRepetitions(sequence: Sequence): boolean {
  const counted = sequence.filter((atom) => !atom.zeroWidth && !(atom.min === 0 && atom.max <= 1));
  return counted.length > 0 && counted.every(unbounded);
}

function unbounded(atom: Atom): boolean {
  if (atom.max === Number.POSITIVE_INFINITY) return true;
  return atom.max === 1 && atom.alternatives !== undefined && atom.alternatives.some(onlyRepetitions);
}

/** Reads a pattern's structure: atoms, groups, alternatives and quantifiers (not what each atom matches). */
class PatternReader {
  private at = 0;
  constructor(private readonly source: string) {}

  alternatives(): Sequence[] {
    const alternatives: Sequence[] = [[]];
    while (this.at < this.source.length) {
      const char = this.source[this.at]!;
      if (char === ')') break;
      if (char === '|') {
        this.at++;
        alternatives.push([]);
        continue;
      }
      alternatives[alternatives.length - 1]!.push(this.atom());
    }
    return alternatives;
  }

  private atom(): Atom {
    const char = this.source[this.at]!;
    let zeroWidth = false;
    let alternatives: Sequence[] | undefined;
    if (char === '(') {
      this.at++;
      const lookaround = /^\?<?[=!]/.exec(this.source.slice(this.at));
      if (lookaround !== null) zeroWidth = true;
      if (this.source[this.at] === '?') {
        const named = /^\?<[^>=!]*>/.exec(this.source.slice(this.at));
        this.at += named?.[0].length ?? lookaround?.[0].length ?? 2; // (?<name>, (?<= (?<! (?= (?!, (?:
      }
      alternatives = this.alternatives();
      if (this.source[this.at] !== ')') throw new SyntaxError('unclosed group');
      this.at++;
    } else if (char === '[') {
      this.at++;
      while (this.at < this.source.length && this.source[this.at] !== ']')
        this.at += this.source[this.at] === '\\' ? 2 : 1;
      if (this.at >= this.source.length) throw new SyntaxError('unclosed class');
      this.at++;
    } else if (char === '\\') {
      const next = this.source[this.at + 1];
      zeroWidth = next === 'b' || next === 'B';
      const braced = /^\\([pPu]\{[^}]*\}|k<[^>]*>)/.exec(this.source.slice(this.at));
      this.at += braced?.[0].length ?? 2;
    } else {
      zeroWidth = char === '^' || char === '$';
      this.at++;
    }
    const { min, max } = this.quantifier();
    return { min, max, zeroWidth, ...(alternatives === undefined ? {} : { alternatives }) };
  }

  private quantifier(): { min: number; max: number } {
    const rest = this.source.slice(this.at);
    const match = /^(?:([*+?])|\{(\d+)(,(\d*))?\})\??/.exec(rest);
    if (match === null) return { min: 1, max: 1 };
    this.at += match[0].length;
    if (match[1] === '*') return { min: 0, max: Number.POSITIVE_INFINITY };
    if (match[1] === '+') return { min: 1, max: Number.POSITIVE_INFINITY };
    if (match[1] === '?') return { min: 0, max: 1 };
    const min = Number(match[2]);
    if (match[3] === undefined) return { min, max: min };
    return { min, max: match[4] === '' ? Number.POSITIVE_INFINITY : Number(match[4]) };
  }
}
