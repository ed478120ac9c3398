/**
 * deploy/kubernetes, checked offline: every manifest against the Kubernetes and KEDA schemas,
 * then what ties them together (names, ports, probes, options, the drain, the metrics the
 * autoscalers read, and the thresholds docs/scaling.md derives with simulate).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { Container } from 'kubernetes-models/v1/Container';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse } from 'yaml';
import { buildProgram } from '../../src/cli.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { loadModel } from '../../src/model/load-model.js';
import type { ModelHealth } from '../../src/model/instance-health.js';
import { buildServer } from '../../src/serve/build-server.js';
import { runBatchline, succeeded } from '../batchline-cli.js';
import { ROOT, spawnServe, type ServeProcess } from './spawn-serve.js';

const run = promisify(execFile);
const DIR = join(ROOT, 'deploy', 'kubernetes');

type Manifest = Record<string, any>;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? yamlFiles(path) : /\.ya?ml$/.test(name) ? [path] : [];
  });
}

const documents = yamlFiles(DIR).flatMap((file) =>
  parseAllDocuments(readFileSync(file, 'utf8')).map((doc) => ({
    file: relative(DIR, file),
    manifest: doc.toJS() as Manifest,
  })),
);
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
};
const KUSTOMIZATION = 'kustomize.config.k8s.io/v1beta1/Kustomization';
const INFERENCE_SERVICE = 'serving.kserve.io/v1beta1/InferenceService';
const typeOf = (manifest: Manifest) => `${manifest.apiVersion}/${manifest.kind}`;
const one = (type: string, file?: string): Manifest => {
  const found = documents.filter((d) => typeOf(d.manifest) === type && (file === undefined || d.file === file));
  expect(found.length, `${type} in ${file ?? 'deploy/kubernetes'}`).toBe(1);
  return found[0]!.manifest;
};

const deployment = one('apps/v1/Deployment');
const pod = deployment.spec.template;
const container = pod.spec.containers[0];
const envOf = (c: Manifest): Record<string, string> =>
  Object.fromEntries((c.env ?? []).map((e: Manifest) => [e.name, e.value]));
const env = envOf(container);
const scaledObject = one('keda.sh/v1alpha1/ScaledObject');
const hpa = one('autoscaling/v2/HorizontalPodAutoscaler');
const adapterValues = parse(readFileSync(join(DIR, 'prometheus-adapter', 'values.yaml'), 'utf8')) as Manifest;
const trigger = (name: string) => scaledObject.spec.triggers.find((t: Manifest) => t.name === name);
const sleepSeconds = (c: Manifest) => Number(c.lifecycle?.preStop?.exec?.command?.[1] ?? Number.NaN);

describe('every manifest', () => {
  it('validates against its schema, or is a kustomization, an InferenceService or Helm values', () => {
    const unchecked: string[] = [];
    for (const { file, manifest } of documents) {
      const Model = MODELS[typeOf(manifest)];
      if (Model) new Model(manifest).validate();
      else if (typeOf(manifest) === INFERENCE_SERVICE) {
        for (const c of manifest.spec.predictor.containers) new Container(c).validate();
      } else if (typeOf(manifest) !== KUSTOMIZATION && file !== 'prometheus-adapter/values.yaml') unchecked.push(file);
    }
    expect(unchecked).toEqual([]);
    expect(documents.length).toBeGreaterThanOrEqual(13);
  });

  it('is named by a kustomization (or applied by hand, as the docs say), and every name exists', () => {
    const kustomizations = documents.filter((d) => typeOf(d.manifest) === KUSTOMIZATION);
    expect(kustomizations.map((k) => k.file).sort()).toEqual([
      'base/kustomization.yaml',
      'bench/kustomization.yaml',
      'kustomization.yaml',
      'prometheus-adapter/kustomization.yaml',
    ]);
    const named = new Set<string>();
    for (const { file, manifest } of kustomizations) {
      for (const resource of manifest.resources as string[]) {
        const path = join(DIR, dirname(file), resource);
        expect(existsSync(path), `${file} names ${resource}`).toBe(true);
        if (statSync(path).isDirectory()) expect(existsSync(join(path, 'kustomization.yaml')), path).toBe(true);
        else named.add(relative(DIR, path));
      }
    }
    const byHand = ['kserve/inferenceservice.yaml', 'bench/merge-job.yaml', 'prometheus-adapter/values.yaml'];
    const loose = documents
      .map((d) => d.file)
      .filter((file) => !file.endsWith('kustomization.yaml') && !named.has(file) && !byHand.includes(file));
    expect(loose).toEqual([]);
    const docs = readFileSync(join(ROOT, 'docs', 'scaling.md'), 'utf8');
    for (const file of byHand) expect(docs, file).toContain(file);
  });

  it('builds with kubectl kustomize (where kubectl is installed)', async () => {
    const kubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((path) => existsSync(path));
    if (!kubectl) {
      console.log('kubectl is not installed: the kustomizations are checked by structure only');
      return;
    }
    for (const dir of ['.', 'base', 'prometheus-adapter', 'bench']) {
      const { stdout } = await run(kubectl, ['kustomize', join(DIR, dir)]);
      const kinds = parseAllDocuments(stdout).map((doc) => (doc.toJS() as Manifest).kind);
      expect(kinds.length, dir).toBeGreaterThan(0);
      if (dir === '.') expect(kinds.sort()).toEqual(['Deployment', 'PersistentVolumeClaim', 'ScaledObject', 'Service']);
    }
  });
});

describe('the Deployment', () => {
  it('configures serve through options that exist, with values serve accepts', () => {
    const known = new Set(Object.values(SERVE_OPTIONS).map((option) => (option as { env?: string }).env));
    for (const name of Object.keys(env)) expect(known, name).toContain(name);
    expect(container.args).toEqual(['serve', '--no-ui']);
    // The same check serve makes at start-up: a value out of range throws INVALID_OPTION.
    const config = resolveOptions(SERVE_OPTIONS, {}, env);
    expect(config.host).toBe('0.0.0.0');
    expect(config.drainTimeoutMs).toBe(Number(env.DRAIN_TIMEOUT_MS));
  });

  it('probes /readyz for readiness and /healthz for liveness on the port it listens on', () => {
    const port = container.ports.find((p: Manifest) => p.name === 'http');
    expect(String(port.containerPort)).toBe(env.PORT);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
  });

  it('waits out the endpoint removal and the whole drain before the kubelet would kill it', () => {
    const preStopS = sleepSeconds(container);
    expect(preStopS).toBeGreaterThan(0);
    const drainMs = Number(env.DRAIN_TIMEOUT_MS);
    expect(drainMs).toBeGreaterThan(0);
    expect(pod.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopS * 1000 + drainMs);
    expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
  });

  it('asks for resources, runs as non-root on a read-only root filesystem, and mounts the model repository where serve reads it', () => {
    expect(container.resources.requests.cpu).toBeDefined();
    expect(container.resources.requests.memory).toBeDefined();
    expect(container.resources.limits.memory).toBeDefined();
    expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
    // As test:container runs the image: serve writes nothing (onnxruntime's telemetry is off).
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(container.securityContext.capabilities.drop).toEqual(['ALL']);
    const mount = container.volumeMounts.find((m: Manifest) => m.mountPath === env.MODEL_REPOSITORY);
    expect(mount?.readOnly).toBe(true);
    const volume = pod.spec.volumes.find((v: Manifest) => v.name === mount.name);
    expect(volume.persistentVolumeClaim.claimName).toBe(
      one('v1/PersistentVolumeClaim', 'base/models-pvc.yaml').metadata.name,
    );
  });

  it('is scraped by Prometheus on its own port and path, and is what the Service selects', () => {
    const annotations = pod.metadata.annotations;
    expect(annotations['prometheus.io/scrape']).toBe('true');
    expect(annotations['prometheus.io/port']).toBe(env.PORT);
    expect(annotations['prometheus.io/path']).toBe('/metrics');
    const service = one('v1/Service');
    expect(pod.metadata.labels).toMatchObject(service.spec.selector);
    expect(deployment.spec.selector.matchLabels).toEqual(service.spec.selector);
    expect(service.spec.ports[0].targetPort).toBe('http');
  });
});

describe('autoscaling on the queue', () => {
  let serve: ServeProcess;
  let metrics: string;
  let workdir: string;
  beforeAll(async () => {
    serve = await spawnServe(['serve', '--no-ui']);
    metrics = await (await fetch(`${serve.url}/metrics`)).text();
    workdir = mkdtempSync(join(tmpdir(), 'batchline-k8s-'));
  });
  afterAll(async () => {
    await serve?.stop('SIGTERM');
    if (workdir) rmSync(workdir, { recursive: true, force: true });
  });

  const adapterRules = () => adapterValues.rules.custom as Manifest[];
  /** prometheus-adapter's query template with its placeholders filled as it would fill them. */
  const adapterQuery = (rule: Manifest) =>
    (rule.metricsQuery as string)
      .replaceAll('<<.Series>>', /^(\w+)/.exec(rule.seriesQuery)![1]!)
      .replaceAll('<<.LabelMatchers>>', 'namespace="default",pod=~"batchline-.*"')
      .replaceAll('<<.GroupBy>>', 'pod');
  const queries = () => [
    ...scaledObject.spec.triggers.map((t: Manifest) => t.metadata.query as string),
    ...adapterRules().map(adapterQuery),
  ];

  it('KEDA and the HPA both scale the Deployment, on the same thresholds', () => {
    expect(scaledObject.spec.scaleTargetRef.name).toBe(deployment.metadata.name);
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deployment.metadata.name,
    });
    expect(scaledObject.spec.triggers.map((t: Manifest) => t.type)).toEqual(['prometheus', 'prometheus']);
    expect(trigger('queue-depth').metricType).toBe('AverageValue');
    const byName = Object.fromEntries(
      hpa.spec.metrics.map((m: Manifest) => [m.pods.metric.name, m.pods.target.averageValue]),
    );
    expect(Object.keys(byName).sort()).toEqual(
      adapterRules()
        .map((r) => r.name.as)
        .sort(),
    );
    expect(Number(byName.batchline_queue_depth_mean)).toBe(Number(trigger('queue-depth').metadata.threshold));
    expect(Number(String(byName.batchline_queue_wait_p95_seconds).replace(/m$/, '')) / 1000).toBe(
      Number(trigger('queue-wait-p95').metadata.threshold),
    );
    expect(Number(trigger('queue-depth').metadata.threshold)).toBeLessThan(Number(env.MAX_QUEUE_SIZE) / 4);
  });

  it('reads metrics that serve exports', () => {
    const names = new Set(queries().flatMap((query) => [...query.matchAll(/\bbatchline_\w+/g)].map((m) => m[0])));
    expect([...names].sort()).toEqual(['batchline_queue_depth', 'batchline_queue_wait_seconds_bucket']);
    for (const name of names) expect(metrics, name).toMatch(new RegExp(`^${name}[{ ]`, 'm'));
  });

  it('writes queries Prometheus parses (promtool, where installed)', async () => {
    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
    if (!promtool) {
      console.log('promtool is not installed: the PromQL of the autoscalers is not parsed');
      return;
    }
    const rules = {
      groups: [
        {
          name: 'autoscaling',
          rules: queries().map((expr, i) => ({ record: `batchline:autoscaling_query_${i}`, expr })),
        },
      ],
    };
    const file = join(workdir, 'rules.yaml');
    writeFileSync(file, JSON.stringify(rules));
    const { stdout } = await run(promtool, ['check', 'rules', file]);
    expect(stdout).toContain('SUCCESS: 4 rules found');
  });

  it('has the thresholds docs/scaling.md derives with simulate', async () => {
    const sweep = succeeded(
      await runBatchline([
        'simulate',
        '--latency-ms',
        '20',
        '--max-batch-size',
        env.MAX_BATCH_SIZE!,
        '--batch-window-ms',
        env.BATCH_WINDOW_MS!,
        '--requests',
        '20000',
        '--sweep',
        'rate=300,320,340,360',
        '--slo',
        'p95<50ms',
      ]),
    );
    const best = /^\d+\s+(\d+)\s.*<- best$/m.exec(sweep.stdout)?.[1];
    expect(best).toBe('320');
    const at = succeeded(
      await runBatchline(['simulate', '--latency-ms', '20', '--rate', best!, '--requests', '20000', '--json', '-']),
    );
    const report = JSON.parse(at.stdout) as { littles_law: { mean_in_queue: number }; queue_wait_ms: { p95: number } };
    const depth = Number(trigger('queue-depth').metadata.threshold);
    const waitMs = Number(trigger('queue-wait-p95').metadata.threshold) * 1000;
    // Rounded down, for the time a new replica takes to get ready: not more, and not much less.
    expect(depth).toBe(Math.floor(report.littles_law.mean_in_queue));
    expect(waitMs).toBe(Math.floor(report.queue_wait_ms.p95 / 5) * 5);
  });
});

describe('the bench Job', () => {
  const job = one('batch/v1/Job', 'bench/job.yaml');
  const merge = one('batch/v1/Job', 'bench/merge-job.yaml');
  const args = job.spec.template.spec.containers[0].args as string[];

  it('is Indexed, each pod seeded by its index and writing its own JSON', () => {
    expect(job.spec.completionMode).toBe('Indexed');
    expect(job.spec.parallelism).toBe(job.spec.completions);
    expect(args[0]).toBe('bench');
    expect(args[args.indexOf('--seed') + 1]).toBe('$(JOB_COMPLETION_INDEX)');
    const output = args[args.indexOf('--json') + 1];
    expect(output).toBe('/results/bench-$(JOB_COMPLETION_INDEX).json');
    expect(job.spec.template.spec.containers[0].volumeMounts[0].mountPath).toBe('/results');
  });

  it('uses options bench has, against the Service', () => {
    const benchCommand = buildProgram().commands.find((command) => command.name() === 'bench');
    const known = new Set(benchCommand?.options.map((option) => option.long));
    for (const flag of args.filter((arg) => arg.startsWith('--'))) expect(known, flag).toContain(flag);
    const service = one('v1/Service');
    expect(args.at(-1)).toBe(`http://${service.metadata.name}:${service.spec.ports[0].port}/v1/infer`);
  });

  it('is merged afterwards from the same claim by bench merge', () => {
    const claim = (j: Manifest) => j.spec.template.spec.volumes[0].persistentVolumeClaim.claimName;
    expect(claim(merge)).toBe(claim(job));
    expect(claim(job)).toBe(one('v1/PersistentVolumeClaim', 'bench/results-pvc.yaml').metadata.name);
    const script = merge.spec.template.spec.containers[0].args[0] as string;
    expect(script).toMatch(/^exec node \/app\/bin\/batchline\.js bench merge \/results\/bench-\*\.json --json \S+$/);
  });
});

describe('the KServe InferenceService', () => {
  const service = one(INFERENCE_SERVICE);
  const predictor = service.spec.predictor.containers[0];

  it('runs the image as its kserve-container on port 8080, with the repository KServe downloads', () => {
    expect(predictor.name).toBe('kserve-container');
    expect(predictor.ports[0].containerPort).toBe(8080);
    expect(envOf(predictor).PORT).toBe('8080');
    expect(envOf(predictor).MODEL_REPOSITORY).toBe('/mnt/models');
    expect(envOf(predictor).STORAGE_URI).toMatch(/^pvc:\/\//);
    expect(service.spec.predictor.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      sleepSeconds(predictor) * 1000 + Number(envOf(predictor).DRAIN_TIMEOUT_MS),
    );
  });

  it("probes the Open Inference Protocol's readiness and batchline's liveness, which serve answers", async () => {
    expect(predictor.readinessProbe.httpGet.path).toBe('/v2/health/ready');
    const serve = await spawnServe(['serve', '--no-ui']);
    try {
      for (const probe of [predictor.readinessProbe, predictor.livenessProbe]) {
        const response = await fetch(`${serve.url}${probe.httpGet.path}`);
        expect(response.status, probe.httpGet.path).toBe(200);
      }
    } finally {
      await serve.stop('SIGTERM');
    }
  });

  it('fails its liveness probe when a model instance cannot come back by itself, so the kubelet restarts it', async () => {
    // /v2/health/live answered 200 here: a pod whose instance could not restart was never restarted.
    const { app, runtime } = buildServer(resolveOptions(SERVE_OPTIONS, { port: 0 }, {}));
    const health: ModelHealth = {
      instances: [],
      healthy: 1,
      ready: true,
      live: false,
      reason: 'model instance 1 failed 3 times in a row (could not restart: ENOENT)',
    };
    runtime.attach({ ...(await loadModel()), health: () => health });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const response = await fetch(`${url}${predictor.livenessProbe.httpGet.path}`);
      expect(response.status).toBe(503);
      expect((await response.json()).error.code).toBe('unhealthy');
    } finally {
      await runtime.drain(0);
      await app.close();
      await runtime.closeModels();
    }
  });
});
