/**
 * No container engine runs here, so the Dockerfile and compose.yaml are checked for what can be
 * checked without one: the files they use exist, the port, the user, that node itself is PID 1
 * (so SIGTERM reaches batchline and it drains), and the health check, run for real.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildProgram } from '../../src/cli.js';
import { ROOT, spawnServe } from './spawn-serve.js';

const run = promisify(execFile);

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions, with continuation lines joined and comments dropped. */
function instructionsOf(text: string): Instruction[] {
  const joined = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

const dockerfile = instructionsOf(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const stages: Instruction[][] = [];
for (const instruction of dockerfile) {
  if (instruction.keyword === 'FROM') stages.push([]);
  stages.at(-1)?.push(instruction);
}
const final = stages.at(-1) ?? [];
const argsOf = (keyword: string, stage = final) => stage.filter((i) => i.keyword === keyword).map((i) => i.args);
const execForm = (keyword: string): string[] => JSON.parse(argsOf(keyword)[0] ?? 'null') as string[];
const envOf = (stage: Instruction[]) =>
  Object.fromEntries(
    argsOf('ENV', stage).flatMap((args) => [...args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])),
  );
const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'));

describe('Dockerfile', () => {
  it('builds in two stages on a slim Node 20 image, or on the base its BASE argument names', () => {
    expect(stages.length).toBe(2);
    const base = dockerfile.find((i) => i.keyword === 'ARG' && i.args.startsWith('BASE='));
    expect(base?.args).toMatch(/^BASE=node:20-[a-z]+-slim$/);
    for (const stage of stages) expect(stage[0]?.args).toMatch(/^\$\{BASE\}( AS \w+)?$/);
  });

  it('copies only files that exist, from a context without node_modules or dist', () => {
    for (const args of argsOf('COPY', dockerfile)) {
      if (args.startsWith('--from=')) continue;
      const sources = args.split(/\s+/).slice(0, -1);
      for (const source of sources) expect(existsSync(join(ROOT, source)), source).toBe(true);
    }
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
    for (const needed of [
      'src',
      'bin',
      'scripts',
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'README.md',
      'LICENSE',
    ]) {
      expect(ignored, needed).not.toContain(needed);
    }
  });

  it('installs the production dependencies only, without install scripts', () => {
    const installs = argsOf('RUN').filter((args) => /\bnpm (ci|install)\b/.test(args));
    expect(installs.length).toBe(1);
    expect(installs[0]).toMatch(/npm ci\b.*--omit=dev/);
    expect(installs[0]).toMatch(/--ignore-scripts/);
  });

  it('runs as a non-root user, on 0.0.0.0, on the port it exposes, with a model repository volume', () => {
    const users = argsOf('USER');
    expect(users.length).toBe(1);
    expect(users[0]).not.toMatch(/^(root|0)(:|$)/);
    const env = envOf(final);
    expect(env.HOST).toBe('0.0.0.0');
    expect(argsOf('EXPOSE')).toEqual([env.PORT]);
    expect(argsOf('VOLUME')).toEqual(['/models']);
    // The user is set before the process starts, after what needs root.
    const userAt = final.findIndex((i) => i.keyword === 'USER');
    expect(final.findIndex((i) => i.keyword === 'ENTRYPOINT')).toBeGreaterThan(userAt);
    expect(final.slice(userAt).some((i) => i.keyword === 'RUN')).toBe(false);
  });

  it('starts node itself as PID 1 (exec form: no shell, no npx) on serve, stopped by SIGTERM', () => {
    const entrypoint = execForm('ENTRYPOINT');
    expect(entrypoint[0]).toBe('node');
    expect(entrypoint[1]).toBe('/app/bin/batchline.js');
    expect(existsSync(join(ROOT, 'bin', 'batchline.js'))).toBe(true);
    expect(execForm('CMD')[0]).toBe('serve');
    expect(argsOf('STOPSIGNAL')).toEqual(['SIGTERM']);
    expect([...entrypoint, ...execForm('CMD')].join(' ')).not.toMatch(/\b(npx|npm|sh)\b/);
  });

  it('has a HEALTHCHECK on /healthz that passes while serve runs and fails once it has drained', async () => {
    const healthcheck = /^(?:--\S+\s+)*CMD\s+(\[.*\])$/.exec(argsOf('HEALTHCHECK')[0] ?? '');
    const probe = JSON.parse(healthcheck?.[1] ?? '[]') as string[];
    expect(probe[0]).toBe('node');
    expect(probe.join(' ')).toContain('/healthz');

    // The image's command, run here: SIGTERM must reach it and make it drain and exit 0.
    const [, , ...command] = [...execForm('ENTRYPOINT'), ...execForm('CMD')];
    const serve = await spawnServe(command);
    try {
      const check = () =>
        run(probe[0] ?? 'node', probe.slice(1), { env: { ...process.env, PORT: serve.port } }).then(
          () => 0,
          (error: { code: number }) => error.code,
        );
      expect(await check()).toBe(0);
      expect(await serve.stop('SIGTERM')).toBe(0);
      expect(serve.output()).toMatch(/SIGTERM: draining/);
      expect(await check()).toBe(1);
    } finally {
      await serve.stop('SIGKILL');
    }
  });
});

interface ComposeService {
  build?: string;
  image?: string;
  ports?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  command?: string[];
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }> | string[];
  profiles?: string[];
}

describe('compose.yaml', () => {
  const compose = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')) as {
    services: Record<string, ComposeService>;
  };
  const { serve, prometheus, bench } = compose.services;

  it('has serve, prometheus and bench', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['bench', 'prometheus', 'serve']);
  });

  it('serves on the image port and lets the drain finish before the kill', () => {
    const port = envOf(final).PORT;
    expect(serve?.build).toBe('.');
    expect(serve?.ports).toEqual([`${port}:${port}`]);
    const drainMs = Number(serve?.environment?.DRAIN_TIMEOUT_MS ?? 10_000);
    expect(Number(/^(\d+)s$/.exec(serve?.stop_grace_period ?? '')?.[1]) * 1000).toBeGreaterThan(drainMs);
  });

  it('has Prometheus scrape serve with a config that exists (promtool checks it where installed)', async () => {
    const mount = prometheus?.volumes?.[0]?.split(':') ?? [];
    const config = join(ROOT, mount[0] ?? '');
    expect(existsSync(config)).toBe(true);
    const scrape = parse(readFileSync(config, 'utf8')) as {
      scrape_configs: { metrics_path: string; static_configs: { targets: string[] }[] }[];
    };
    expect(scrape.scrape_configs[0]?.metrics_path).toBe('/metrics');
    expect(scrape.scrape_configs[0]?.static_configs[0]?.targets).toEqual([`serve:${envOf(final).PORT}`]);
    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
    if (!promtool) {
      console.log('promtool is not installed: the Prometheus config is checked by structure only');
      return;
    }
    const { stdout } = await run(promtool, ['check', 'config', config]);
    expect(stdout).toContain('SUCCESS');
    // The alerting rules: the same file in the container as in the checkout, all of its rules.
    const alerts = parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'alerts.yaml'), 'utf8')) as {
      groups: { rules: unknown[] }[];
    };
    expect(stdout).toContain(`SUCCESS: ${alerts.groups[0]!.rules.length} rules found`);
    const rules = prometheus?.volumes?.[1]?.split(':') ?? [];
    expect(rules[0]).toBe('./deploy/prometheus/alerts.yaml');
    expect(rules[1]).toBe(join(dirname(mount[1] ?? ''), 'alerts.yaml'));
  });

  it('runs bench, once serve is healthy, with options bench has', () => {
    expect(bench?.profiles).toEqual(['bench']);
    expect(bench?.depends_on).toEqual({ serve: { condition: 'service_healthy' } });
    const [subcommand, ...args] = bench?.command ?? [];
    expect(subcommand).toBe('bench');
    expect(args.at(-1)).toBe(`http://serve:${envOf(final).PORT}/v1/infer`);
    const benchCommand = buildProgram().commands.find((command) => command.name() === 'bench');
    const known = new Set(benchCommand?.options.map((option) => option.long));
    for (const flag of args.filter((arg) => arg.startsWith('--'))) expect(known, flag).toContain(flag);
  });
});
