/**
 * What a report page shows, as plain data. Node builds it from a bench run, a simulation or a
 * sweep and embeds it in the page as JSON; the page's script draws it (with uPlot). After a
 * re-run in the page, the page builds the simulation's part again with the same builders, so
 * every type here is plain, serializable and free of Node and of the DOM.
 */

/**
 * How the x axis reads: plain numbers; seconds since the start of a run; or HdrHistogram's
 * percentile axis, where x is 1/(1−q) on a log scale, labelled 0%, 90%, 99%, 99.9% …
 */
export type XScale = 'linear' | 'seconds' | 'percentile';

export interface ChartSeries {
  label: string;
  /** One value per x; null where there is none (a gap, unless `spanGaps`). */
  values: (number | null)[];
  /** A CSS colour. */
  color: string;
  /** `line` (default), `points` (markers only), `bars`, or `step` (held until the next x). */
  style?: 'line' | 'points' | 'bars' | 'step';
  dash?: boolean;
  /** Drawn against the right-hand axis (`ChartSpec.y2`). */
  rightAxis?: boolean;
  /** Joins the points across nulls (a frontier through its members). */
  spanGaps?: boolean;
}

export interface ChartSpec {
  /** Unique in the page; the test and the DOM use it. */
  id: string;
  title: string;
  /** How to read it, in a sentence or two. */
  note: string;
  x: { label: string; scale: XScale; values: number[] };
  y: { label: string; log?: boolean };
  y2?: { label: string };
  series: ChartSeries[];
  /** Vertical markers, such as the end of the warm-up. */
  markers?: { x: number; label: string }[];
  /** A label beside the point at x[i] (a sweep's configuration or rate), null for none. */
  pointLabels?: (string | null)[];
}

/** A small table of figures (percentiles, counts). */
export interface PageTable {
  title: string;
  head: string[];
  rows: string[][];
}

export type PageKind = 'bench' | 'bench-sweep' | 'bench-compare' | 'simulate' | 'simulate-sweep';

export interface ReportPageData {
  kind: PageKind;
  title: string;
  /** One line under the title: the command's setup. */
  subtitle: string;
  /** Key figures, shown as large numbers above the charts. */
  facts: { label: string; value: string }[];
  tables: PageTable[];
  warnings: string[];
  charts: ChartSpec[];
  /** Charts that could not be drawn and why (bench against a server that is not batchline). */
  missing: { title: string; why: string }[];
  /** What made the page, for its footer: `batchline simulate --rate 300 …`. */
  generatedBy: string;
  /** ISO time the page was made. */
  generatedAt: string;
}
