/**
 * .github/workflows: no runner is reachable from here, so the workflows are validated offline
 * against GitHub's schema (@action-validator/cli, which carries SchemaStore's schemas), and what
 * ties them to the project is checked: the npm scripts they run exist, Node 20, read-only
 * permissions everywhere but the Pages deploy job.
 */
import { readdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runNode } from '../batchline-cli.js';
import { ROOT } from './spawn-serve.js';

const DIR = join(ROOT, '.github', 'workflows');
const VALIDATOR = join(ROOT, 'node_modules', '@action-validator', 'cli', 'cli.mjs');
const files = readdirSync(DIR).filter((name) => name.endsWith('.yml'));

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Job {
  permissions?: Record<string, string>;
  steps?: Step[];
  needs?: string | string[];
}
interface Workflow {
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}
const workflows = Object.fromEntries(
  files.map((name) => [name, parse(readFileSync(join(DIR, name), 'utf8')) as Workflow]),
);
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const validate = async (file: string) => (await runNode([VALIDATOR, file])).code;

describe('.github/workflows', () => {
  it('has a test workflow and a Pages workflow', () => {
    expect(files.sort()).toEqual(['ci.yml', 'pages.yml']);
  });

  it.each(files)('%s is valid against the GitHub Actions schema', async (name) => {
    expect(await validate(join(DIR, name))).toBe(0);
  });

  it('the validator rejects a workflow with a misspelt key (it can fail)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'batchline-workflow-'));
    try {
      const broken = readFileSync(join(DIR, 'ci.yml'), 'utf8').replace('runs-on:', 'runs_on:');
      writeFileSync(join(dir, 'ci.yml'), broken);
      expect(await validate(join(dir, 'ci.yml'))).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the repository only, except the Pages deploy job, which alone writes Pages and asks for an OIDC token', () => {
    const writers: string[] = [];
    for (const [name, workflow] of Object.entries(workflows)) {
      expect(workflow.permissions, name).toEqual({ contents: 'read' });
      for (const [jobName, job] of Object.entries(workflow.jobs)) {
        const granted = Object.entries(job.permissions ?? {}).filter(([, level]) => level === 'write');
        if (granted.length > 0) writers.push(`${name}:${jobName}:${granted.map(([scope]) => scope).sort()}`);
      }
    }
    expect(writers).toEqual(['pages.yml:deploy:id-token,pages']);
    const deploy = workflows['pages.yml']?.jobs.deploy;
    expect(deploy?.steps?.map((step) => step.uses)).toEqual(['actions/deploy-pages@v4']);
  });

  it('tests on Node 20 with npm test, and runs the container and scale tests', () => {
    const ci = workflows['ci.yml']!;
    const runs = Object.values(ci.jobs).flatMap((job) => job.steps ?? []);
    for (const step of runs.filter((s) => s.uses?.startsWith('actions/setup-node')))
      expect(step.with?.['node-version']).toBe(20);
    const commands = runs.flatMap((step) => step.run ?? []).join('\n');
    expect(commands).toMatch(/\bnpm test\b/);
    expect(commands).toMatch(/npm run test:container\b/);
    expect(commands).toMatch(/npm run test:scale\b/);
  });

  it('runs only npm scripts that exist, and uploads the directory build:pages writes', () => {
    const commands = Object.values(workflows)
      .flatMap((workflow) => Object.values(workflow.jobs))
      .flatMap((job) => job.steps ?? [])
      .flatMap((step) => step.run ?? []);
    for (const match of commands.join('\n').matchAll(/npm run ([\w:-]+)/g))
      expect(scripts, match[1]).toHaveProperty(match[1] as string);
    const upload = workflows['pages.yml']?.jobs.build?.steps?.find((step) =>
      step.uses?.startsWith('actions/upload-pages-artifact'),
    );
    expect(upload?.with?.path).toBe('site');
    expect(scripts['build:pages']).toMatch(/simulate .*--html site\/index\.html/);
  });
});
