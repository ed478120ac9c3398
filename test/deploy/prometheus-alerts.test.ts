/**
 * deploy/prometheus/alerts.yaml: rules promtool accepts, whose unit tests pass
 * (alerts.test.yaml), on series serve exports with the labels the rules select and keep.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT, spawnServe, type ServeProcess } from './spawn-serve.js';

const run = promisify(execFile);
const DIR = join(ROOT, 'deploy', 'prometheus');
const rules = (parse(readFileSync(join(DIR, 'alerts.yaml'), 'utf8')) as { groups: { rules: { expr: string }[] }[] })
  .groups[0]!.rules;
const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
if (promtool === undefined) console.log('promtool is not installed: the alerting rules are not checked by it');

describe('the alerting rules', () => {
  let serve: ServeProcess;
  let metrics: string;
  beforeAll(async () => {
    serve = await spawnServe(['serve', '--no-ui']);
    // One answer, so that batchline_responses_total has a series.
    await fetch(`${serve.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
    });
    metrics = await (await fetch(`${serve.url}/metrics`)).text();
  });
  afterAll(async () => {
    await serve?.stop('SIGTERM');
  });

  it('select series serve exports, by labels those series have', () => {
    for (const { expr } of rules) {
      for (const [, name, matchers] of expr.matchAll(/\b(batchline_\w+)(?:\{([^}]*)\})?/g)) {
        const series = metrics.split('\n').filter((line) => line.startsWith(`${name}{`));
        expect(series.length, `${name} in /metrics`).toBeGreaterThan(0);
        for (const [, label] of (matchers ?? '').matchAll(/(\w+)\s*=~?/g))
          expect(
            series.some((line) => line.includes(`${label}="`)),
            `${name} has the label ${label}`,
          ).toBe(true);
      }
    }
  });

  it('keep the model and version each series carries, which the summaries name', () => {
    for (const line of metrics
      .split('\n')
      .filter((l) => /^batchline_(instances|queue_depth|responses_total)\{/.test(l)))
      expect(line).toMatch(/model="[^"]+".*version="[^"]+"|version="[^"]+".*model="[^"]+"/);
  });

  it.runIf(promtool !== undefined)('pass promtool check rules and their unit tests', async () => {
    const checked = await run(promtool!, ['check', 'rules', join(DIR, 'alerts.yaml')]);
    expect(checked.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    const tested = await run(promtool!, ['test', 'rules', 'alerts.test.yaml'], { cwd: DIR });
    expect(tested.stdout).toContain('SUCCESS');
  });
});
