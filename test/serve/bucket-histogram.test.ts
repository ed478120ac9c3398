import client from 'prom-client';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BucketHistogram, HistogramFamily } from '../../src/serve/bucket-histogram.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** The exposition text of one histogram fed `values`, by prom-client's own Histogram or ours. */
async function render(kind: 'prom-client' | 'bucket', values: readonly number[]): Promise<string> {
  const registry = new client.Registry();
  const config = { name: 'latency_seconds', help: 'Latency.', buckets: BUCKETS, registers: [registry] };
  const histogram = kind === 'bucket' ? new BucketHistogram(config) : new client.Histogram(config);
  for (const value of values) histogram.observe(value);
  return registry.metrics();
}

describe('BucketHistogram', () => {
  it('renders exactly what prom-client renders for the same observations, bounds included', async () => {
    const values = [0, 0.001, 0.0011, 0.01, 0.5, 1, 7];
    expect(await render('bucket', values)).toBe(await render('prom-client', values));
    expect(await render('bucket', values)).toContain('latency_seconds_bucket{le="0.001"} 2');
  });

  it('agrees with prom-client on any observations', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constantFrom(...BUCKETS), fc.double({ min: 0, max: 2, noNaN: true })), { maxLength: 50 }),
        async (values) => {
          expect(await render('bucket', values)).toBe(await render('prom-client', values));
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('HistogramFamily', () => {
  it('renders what a labelled prom-client Histogram renders, one child per label set', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b'), fc.double({ min: 0, max: 2, noNaN: true })), { maxLength: 40 }),
        async (observations) => {
          const ours = new client.Registry();
          const family = new HistogramFamily('latency_seconds', 'Latency.', ours);
          const children = {
            a: family.child({ model: 'a', version: '1' }, BUCKETS),
            b: family.child({ model: 'b', version: '2' }, BUCKETS),
          };
          const theirs = new client.Registry();
          const reference = new client.Histogram({
            name: 'latency_seconds',
            help: 'Latency.',
            buckets: BUCKETS,
            labelNames: ['model', 'version'],
            registers: [theirs],
          });
          // prom-client lists label sets in the order they were first seen: see both first.
          reference.zero({ model: 'a', version: '1' });
          reference.zero({ model: 'b', version: '2' });
          for (const [model, value] of observations) {
            children[model].observe(value);
            reference.observe({ model, version: model === 'a' ? '1' : '2' }, value);
          }
          expect(await ours.metrics()).toBe(await theirs.metrics());
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe('BucketHistogram.extendAbove (a PATCH that raises max_batch_size)', () => {
  it('adds the bounds above its highest, keeping every bound and count it had', async () => {
    const registry = new client.Registry();
    const histogram = new BucketHistogram({ name: 'size', help: 'Size.', buckets: [1, 2, 4], registers: [registry] });
    for (const value of [1, 2, 3, 4]) histogram.observe(value);
    histogram.extendAbove([1, 2, 3, 4, 8, 16]);
    for (const value of [5, 16, 20]) histogram.observe(value);
    const text = await registry.metrics();
    const buckets = [...text.matchAll(/^size_bucket\{le="([^"]+)"\} (\d+)$/gm)].map(([, le, count]) => [
      le,
      Number(count),
    ]);
    // 3 is no new bound (it is below the highest, 4): the bounds it had keep their meaning.
    expect(buckets).toEqual([
      ['1', 1],
      ['2', 2],
      ['4', 4],
      ['8', 5],
      ['16', 6],
      ['+Inf', 7],
    ]);
    expect(text).toContain('size_count 7');
    expect(text).toContain('size_sum 51');
  });
});
