import type { BatchlineError } from '../errors.js';
import { invalidOption, quotedValue } from './invalid-option-value.js';

/**
 * k6's thresholds, as a k6 user copies them out of a script's `options.thresholds`:
 * `http_req_duration: p(95)<500`, `'http_req_duration': ['p(95)<500', 'p(99)<1000']`,
 * `http_req_failed: ['rate<0.01']`, several entries joined by commas, in braces or not. They
 * are read into the objective grammar's clauses (`p95<500,p99<1000`, `errors<0.01`) when they
 * name what bench measures, and refused, naming what does, when they do not.
 */

/** What a k6 user may write, for every refusal. */
export const K6_FORMS =
  "k6's http_req_duration: ['p(95)<500'] (p(50), p(90), p(95), p(99), p(99.9), avg, med or max, in ms) and http_req_failed: ['rate<0.01']";

/** k6's percentiles bench reports, by their k6 number. */
const PERCENTILES = new Map<number, string>([
  [50, 'p50'],
  [90, 'p90'],
  [95, 'p95'],
  [99, 'p99'],
  [99.9, 'p999'],
]);

/** An entry: a metric name (quoted or not, with k6's tags in braces), a colon, its expressions. */
const ENTRY = /^(['"]?)([a-z_][a-z0-9_]*)\s*(\{[^}]*\})?\1\s*:\s*([\s\S]*)$/i;
/** An expression: k6's aggregation method, an operator and a value. */
const EXPRESSION = /^([a-z]+|p\(\s*[^)]*\))\s*(<=|<|>=|>|===|==|!=)\s*(.*)$/i;

/**
 * The clauses of k6's form as the objective grammar's text, such as `p95<500,errors<0.01`, or
 * undefined when `text` is not in k6's form (no `name:` first).
 */
export function fromK6Thresholds(text: string, flag: string): string | undefined {
  let body = text.trim();
  if (body.startsWith('{') && body.endsWith('}')) body = body.slice(1, -1).trim();
  if (!ENTRY.test(body)) return undefined;
  const clauses: string[] = [];
  for (const entry of splitTopLevel(body)) {
    const match = ENTRY.exec(entry);
    if (match === null) throw refuse(flag, text, `${quotedValue(entry)} is not metric: ['expression']`);
    const [, , metric = '', tags, value = ''] = match;
    for (const expression of expressionsOf(value.trim(), flag, text))
      clauses.push(clauseOf(metric, tags, expression, flag, text));
  }
  return clauses.join(',');
}

/** A value: one expression, quoted or not, or an array of them; k6's object form is refused. */
function expressionsOf(value: string, flag: string, text: string): string[] {
  if (value.startsWith('{'))
    throw refuse(
      flag,
      text,
      `${quotedValue(value)}: bench judges thresholds when the run ends, so takes no abortOnFail object`,
    );
  const items = value.startsWith('[') && value.endsWith(']') ? splitTopLevel(value.slice(1, -1)) : [value];
  const expressions = items.map(unquote).filter((item) => item !== '');
  if (expressions.length === 0) throw refuse(flag, text, 'a metric has no expression');
  return expressions;
}

function clauseOf(metric: string, tags: string | undefined, expression: string, flag: string, text: string): string {
  const name = metric.toLowerCase();
  if (name !== 'http_req_duration' && name !== 'http_req_failed')
    throw refuse(flag, text, `k6's ${quotedValue(metric)} is not a figure bench judges`);
  const tagText = tags?.replace(/\s+/g, '');
  if (
    tagText !== undefined &&
    !(name === 'http_req_duration' && /^\{expected_response:['"]?true['"]?\}$/i.test(tagText))
  )
    throw refuse(
      flag,
      text,
      `bench tags no request: ${metric}${tags} is not one of its figures (its latency is already of the 2xx answers, as {expected_response:true})`,
    );
  const match = EXPRESSION.exec(expression);
  if (match === null) throw refuse(flag, text, `${quotedValue(expression)} is not aggregation<value`);
  const [, method = '', op = '', bound = ''] = match;
  if (op !== '<' && op !== '<=')
    throw refuse(flag, text, `${quotedValue(expression)}: bench's thresholds are upper bounds, < or <=, not ${op}`);
  const benchMetric = name === 'http_req_failed' ? ratioMethod(method) : latencyMethod(method);
  if (benchMetric === undefined)
    throw refuse(
      flag,
      text,
      `${quotedValue(expression)}: ${metric} takes ${name === 'http_req_failed' ? 'rate' : 'p(50), p(90), p(95), p(99), p(99.9), avg, med or max'}, not ${method}`,
    );
  return `${benchMetric}${op}${bound.trim()}`;
}

function latencyMethod(method: string): string | undefined {
  const lower = method.toLowerCase().replace(/\s+/g, '');
  if (lower === 'avg') return 'mean';
  if (lower === 'med') return 'p50';
  if (lower === 'max') return 'max';
  const percentile = /^p\((\d+(?:\.\d+)?)\)$/.exec(lower);
  return percentile === null ? undefined : PERCENTILES.get(Number(percentile[1]));
}

function ratioMethod(method: string): string | undefined {
  return method.toLowerCase() === 'rate' ? 'errors' : undefined;
}

/** Splits at the commas outside quotes, brackets and braces. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts.filter((part) => part !== '');
}

function unquote(item: string): string {
  const trimmed = item.trim();
  const first = trimmed[0];
  if ((first === "'" || first === '"' || first === '`') && trimmed.endsWith(first) && trimmed.length >= 2)
    return trimmed.slice(1, -1).trim();
  return trimmed;
}

function refuse(flag: string, text: string, why: string): BatchlineError {
  return invalidOption(flag, quotedValue(text), `${K6_FORMS}, or clauses such as p99<50ms,errors<1%`, why);
}
