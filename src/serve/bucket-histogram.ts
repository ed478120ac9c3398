import type client from 'prom-client';

/**
 * A Prometheus histogram without labels that counts into a typed array and hands its buckets
 * to a prom-client Registry at scrape time, which formats it like any other metric.
 *
 * prom-client's own `Histogram.observe` allocates a closure and a label object and finds the
 * bucket by its string key on every call: 330–430 ns an observation against 20–40 ns here
 * (2 M observations in a loop, Node 20), and serve makes two observations a request.
 */
export class BucketHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private upperBounds: Float64Array;
  /** counts[i]: observations in (upperBounds[i-1], upperBounds[i]]; the last one is +Inf. */
  private counts: Float64Array;
  private sumNow = 0;
  private countNow = 0;

  constructor(config: { name: string; help: string; buckets: readonly number[]; registers?: client.Registry[] }) {
    this.name = config.name;
    this.help = config.help;
    this.upperBounds = Float64Array.from([...config.buckets].sort((a, b) => a - b));
    this.counts = new Float64Array(this.upperBounds.length + 1);
    for (const registry of config.registers ?? []) registry.registerMetric(this as unknown as client.Metric);
  }

  observe(value: number): void {
    const bounds = this.upperBounds;
    let bucket = 0;
    while (bucket < bounds.length && value > (bounds[bucket] as number)) bucket++;
    this.counts[bucket]!++;
    this.sumNow += value;
    this.countNow++;
  }

  /**
   * Adds the bounds of `buckets` above its highest one; the bounds it has stay, with their counts,
   * so that no `le` series changes its meaning or restarts (a Prometheus rate over the change
   * stays right). The new bounds count what was observed at or below them from the start: what
   * +Inf held above the old highest bound moves to the new +Inf, as it cannot be placed.
   */
  extendAbove(buckets: readonly number[]): void {
    const top = this.upperBounds[this.upperBounds.length - 1] ?? Number.NEGATIVE_INFINITY;
    const added = [...buckets].filter((bound) => bound > top).sort((a, b) => a - b);
    if (added.length === 0) return;
    const bounds = new Float64Array(this.upperBounds.length + added.length);
    bounds.set(this.upperBounds);
    bounds.set(added, this.upperBounds.length);
    const counts = new Float64Array(bounds.length + 1);
    counts.set(this.counts.subarray(0, this.upperBounds.length));
    counts[bounds.length] = this.counts[this.upperBounds.length] as number;
    this.upperBounds = bounds;
    this.counts = counts;
  }

  /** The sum of the values observed (since the last reset). */
  get sum(): number {
    return this.sumNow;
  }

  /** How many values were observed (since the last reset). */
  get count(): number {
    return this.countNow;
  }

  reset(): void {
    this.counts.fill(0);
    this.sumNow = 0;
    this.countNow = 0;
  }

  /** The values in prom-client's metric-object form: cumulative buckets, then sum and count. */
  get(): MetricObject {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.values({}, []),
    };
  }

  /** Appends this histogram's values, each with `labels` besides its own, to `into`. */
  values(labels: Labels, into: MetricValue[]): MetricValue[] {
    let cumulative = 0;
    this.upperBounds.forEach((le, i) => {
      cumulative += this.counts[i] as number;
      into.push({ labels: { le, ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
    });
    into.push(
      { labels: { le: '+Inf', ...labels }, value: this.count, metricName: `${this.name}_bucket` },
      { labels: { ...labels }, value: this.sum, metricName: `${this.name}_sum` },
      { labels: { ...labels }, value: this.count, metricName: `${this.name}_count` },
    );
    return into;
  }
}

type Labels = Record<string, string | number>;
interface MetricValue {
  labels: Labels;
  value: number;
  metricName: string;
}
interface MetricObject {
  name: string;
  help: string;
  type: 'histogram';
  aggregator: 'sum';
  values: MetricValue[];
}

/**
 * One histogram metric with a child per label set (a model version), each a BucketHistogram:
 * the hot path observes on its own child directly, with no label lookup, and the family
 * hands prom-client every child's buckets at scrape time.
 */
export class HistogramFamily {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly children = new Map<BucketHistogram, Labels>();

  constructor(
    readonly name: string,
    readonly help: string,
    registry: client.Registry,
  ) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  /** A new child for `labels`, with its own buckets. */
  child(labels: Labels, buckets: readonly number[]): BucketHistogram {
    const child = new BucketHistogram({ name: this.name, help: this.help, buckets });
    this.children.set(child, labels);
    return child;
  }

  remove(child: BucketHistogram): void {
    this.children.delete(child);
  }

  reset(): void {
    for (const child of this.children.keys()) child.reset();
  }

  get(): MetricObject {
    const values: MetricValue[] = [];
    for (const [child, labels] of this.children) child.values(labels, values);
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
