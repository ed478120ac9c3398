import { readFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { inferRouteOf, probeTarget } from '../bench/default-body.js';
import { LISTENER_WAIT_MS, listening, retriedWhile, untilLoaded } from '../bench/wait-for-listener.js';
import { probeGrpcModel } from './bench-grpc-probe.js';
import type { ValidatedBench } from '../bench/plan-from-options.js';
import { grpcModelOf } from '../bench/target-url.js';
import type { BenchPlan } from '../bench/plan.js';
import { sideReadsOf } from '../bench/side-reads.js';
import { encodeModelInferRequest, modelInferRequestFromJson } from '../protocol/grpc-json-request.js';

/** Reads --body (inline, @file, or @file.jsonl: one body a line), or finds one that fits a batchline server's model. */
export async function withBody(v: ValidatedBench, stderr: NodeJS.WritableStream): Promise<BenchPlan> {
  const plan = v.plan;
  let bodies: Buffer[] | undefined;
  if (v.bodySource.kind === 'inline') bodies = [Buffer.from(v.bodySource.text)];
  else if (v.bodySource.kind === 'file') bodies = await readBodies(v.bodySource.path);
  else if (new URL(plan.url).protocol === 'grpc:') {
    // Its probe, refused, knew nothing, and the run stopped wanting a --body it did not need.
    const waitedUntilMs = await awaitListener(new URL(plan.url), stderr);
    bodies = [await grpcBodyFromServer(plan.url, stderr, waitedUntilMs)];
  } else if (!v.methodGiven || ['POST', 'PUT', 'PATCH'].includes(plan.method) || isInferRoute(plan.url)) {
    if (isInferRoute(plan.url)) {
      // A server that has just begun to listen may still be loading its models: its probe says nothing until it has.
      const waitedUntilMs = await awaitListener(new URL(plan.url), stderr);
      if (waitedUntilMs !== undefined) await untilLoaded(new URL(plan.url), waitedUntilMs);
    }
    const target = await probeTarget(plan.url, undefined, sideReadsOf(plan));
    const batchline = target.kind !== 'unknown';
    if (target.kind === 'toy-model' && (!v.methodGiven || plan.method === 'POST')) {
      bodies = [Buffer.from(target.body)];
      stderr.write(`batchline bench: the target is a batchline server with toy-logistic-v1; sending ${target.body}\n`);
    } else if (target.kind === 'generated' && (!v.methodGiven || plan.method === 'POST')) {
      bodies = [Buffer.from(target.body)];
      stderr.write(
        `batchline bench: the target is a batchline server; sending a made-up body of the shape of ${target.about}: ${target.body.length > 80 ? `${target.body.slice(0, 77)}...` : target.body}\n`,
      );
    } else if (batchline && isInferRoute(plan.url)) {
      // Otherwise every request gets 404 (or 400): a load test of the error path, not of the model.
      const model =
        target.kind === 'batchline-other-model'
          ? `${target.model}; its inference routes: ${target.routes.join(', ')}`
          : target.kind === 'generated'
            ? `${target.about} takes a body such as ${target.body.length > 60 ? `${target.body.slice(0, 57)}...` : target.body}`
            : `toy-logistic-v1 takes ${target.body}`;
      throw new BatchlineError(
        'INVALID_OPTION',
        `--body: the target is a batchline server, whose ${new URL(plan.url).pathname} takes POST with a JSON body; ${model}: pass --body '<json>' or --body @file${v.methodGiven && plan.method !== 'POST' ? ` and drop --method ${plan.method}` : ''}`,
      );
    } else if (v.methodGiven && ['POST', 'PUT', 'PATCH'].includes(plan.method)) {
      const why =
        target.kind === 'batchline-other-model' ? `the batchline server: ${target.model}` : 'no body was given';
      throw new BatchlineError(
        'INVALID_OPTION',
        `--body: missing for ${plan.method}: ${why}; pass --body '<json>' or --body @file`,
      );
    }
  }
  if (bodies !== undefined && new URL(plan.url).protocol === 'grpc:')
    return { ...plan, bodies: grpcBodies(plan, bodies) };
  if (bodies === undefined) return plan;
  const headers = v.contentTypeGiven ? plan.headers : { ...plan.headers, 'content-type': 'application/json' };
  return { ...plan, bodies, headers, method: v.methodGiven ? plan.method : 'POST' };
}

/**
 * Each --body (the Open Inference Protocol's JSON) as the bytes of a gRPC ModelInferRequest for
 * the URL's model, encoded once before the run.
 */
function grpcBodies(plan: BenchPlan, bodies: readonly Buffer[]): Buffer[] {
  const { name, version } = grpcModelOf(new URL(plan.url));
  return bodies.map((body) => {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new BatchlineError('INVALID_OPTION', `--body: not valid JSON (${(error as Error).message})`);
    }
    return encodeModelInferRequest(modelInferRequestFromJson(json, name, version));
  });
}

/**
 * A body for a grpc:// run given none, made up from the model's metadata (ModelMetadata), as an
 * HTTP run's is from batchline's: or INVALID_OPTION saying why it needs one, or that the server
 * has no such model (a run would be one of NOT_FOUND).
 */
async function grpcBodyFromServer(
  url: string,
  stderr: NodeJS.WritableStream,
  /** Set when bench waited for the listener (performance.now()): it may answer UNAVAILABLE while its models load. */
  waitedUntilMs?: number,
): Promise<Buffer> {
  const model = grpcModelOf(new URL(url));
  const probe = await retriedWhile(
    () => probeGrpcModel(new URL(url), model),
    (answer) => answer.kind === 'unavailable',
    waitedUntilMs,
  );
  const needed =
    "--body: a grpc:// URL needs one, the request: the Open Inference Protocol's JSON body, as POST /v2/models/NAME/infer takes it (--body @request.json)";
  switch (probe.kind) {
    case 'generated':
      stderr.write(
        `batchline bench: the gRPC server has ${probe.about}; sending ${probe.body.length > 80 ? `${probe.body.slice(0, 77)}...` : probe.body}\n`,
      );
      return Buffer.from(probe.body);
    case 'missing':
      throw new BatchlineError(
        'INVALID_OPTION',
        `<url>: the gRPC server has no model ${model.name}${model.version === '' ? '' : ` version ${model.version}`} (NOT_FOUND: ${probe.details})`,
      );
    case 'refused':
      // Only the name and version were sent: a run would be one of INVALID_ARGUMENT, not a want of --body.
      throw new BatchlineError(
        'INVALID_OPTION',
        `<url>: the gRPC server refused model ${model.name}${model.version === '' ? '' : ` version ${model.version}`} (INVALID_ARGUMENT: ${probe.details})`,
      );
    case 'only-yours':
      throw new BatchlineError('INVALID_OPTION', `${needed}; ${probe.why}`);
    case 'unavailable':
    case 'unknown':
      throw new BatchlineError('INVALID_OPTION', needed);
  }
}

/**
 * An inference route (or a grpc:// model) given no body, on a host that refuses connections: a
 * server still starting (`serve &` on the line before). Its probe would be refused and, once it
 * listened, the run one of 404s (GET, no body), so bench waits for it, up to LISTENER_WAIT_MS; a
 * target that never comes is loaded all the same, and the run reports its refusals as for any
 * other URL (a grpc:// one stops wanting a --body, as it does for a server that does not say).
 * Returns the wait's deadline when it waited and the host came (`performance.now()`): a server
 * that has only just begun to listen may still be loading its models, which the probe then waits
 * for within the same bound.
 */
async function awaitListener(url: URL, stderr: NodeJS.WritableStream): Promise<number | undefined> {
  const seconds = LISTENER_WAIT_MS / 1000;
  const deadlineMs = performance.now() + LISTENER_WAIT_MS;
  let waited = false;
  const up = await listening(url, LISTENER_WAIT_MS, () => {
    waited = true;
    stderr.write(`batchline bench: nothing listens at ${url.host} yet; waiting up to ${seconds} s for it to start\n`);
  });
  if (!up)
    stderr.write(`batchline bench: still nothing listens at ${url.host} after ${seconds} s; running all the same\n`);
  return waited && up ? deadlineMs : undefined;
}

/** batchline's inference routes: `/v1/infer`, `/models/{name}/predict`, V1's `:predict` and `/v2`'s `/infer`. */
function isInferRoute(url: string): boolean {
  return inferRouteOf(new URL(url)) !== undefined;
}

/**
 * `--body @file`: the file as one body, or, for `.jsonl`/`.ndjson`, one body per non-empty line,
 * which the requests cycle through (varied payloads, such as images of several sizes).
 */
async function readBodies(path: string): Promise<Buffer[]> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `--body: cannot read @${path}: ${(error as Error).message}`);
  }
  // As --body '' is refused: an empty file (a mistyped redirect) sent empty bodies to a load of 400s.
  if (content.length === 0)
    throw new BatchlineError('INVALID_OPTION', `--body: @${path} is empty; expected the request body`);
  if (!/\.(jsonl|ndjson)$/i.test(path)) return [content];
  const lines = content
    .toString('utf8')
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '');
  if (lines.length === 0)
    throw new BatchlineError('INVALID_OPTION', `--body: @${path} holds no line; expected one request body per line`);
  return lines.map((line) => Buffer.from(line));
}
