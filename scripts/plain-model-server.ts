/**
 * The middleware's baseline for `npm run bench:batching`: a plain Fastify route that runs each
 * request through onnxruntime as it comes — a batch of one, onnxruntime-node's public `run`, no
 * queue, no bound, no batching, no worker thread — the way a model is first put behind HTTP. It
 * takes the same Open Inference Protocol request as `batchline serve`'s /v2 route (a JSON header
 * of `Inference-Header-Content-Length` bytes, then the tensor's bytes) and answers the output as
 * a binary tensor after its JSON header, as serve does when asked for binary data.
 *
 * Usage: node dist/scripts/plain-model-server.js MODEL.onnx; prints `listening on URL`.
 */
import Fastify from 'fastify';
import ort from 'onnxruntime-node';

const modelPath = process.argv[2];
if (modelPath === undefined) throw new Error('usage: plain-model-server MODEL.onnx');
const session = await ort.InferenceSession.create(modelPath, {
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
});
const inputName = session.inputNames[0] as string;
const outputName = session.outputNames[0] as string;

interface InputHeader {
  inputs: { name: string; shape: number[]; datatype: string }[];
}

const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
app.post('/v2/models/:name/infer', async (request, reply) => {
  const body = request.body as Buffer;
  const headerLength = Number(request.headers['inference-header-content-length']);
  const header = JSON.parse(body.subarray(0, headerLength).toString('utf8')) as InputHeader;
  const input = header.inputs[0];
  if (input === undefined || input.datatype !== 'FP32') throw new Error('one FP32 input expected');
  // A copy: the body's bytes need not be aligned for a Float32Array.
  const bytes = body.subarray(headerLength);
  const data = new Float32Array(bytes.length / 4);
  new Uint8Array(data.buffer).set(bytes);
  const outputs = await session.run({ [inputName]: new ort.Tensor('float32', data, input.shape) });
  const output = outputs[outputName] as ort.Tensor;
  const values = output.data as Float32Array;
  const json = Buffer.from(
    JSON.stringify({
      model_name: (request.params as { name: string }).name,
      outputs: [
        {
          name: outputName,
          datatype: 'FP32',
          shape: output.dims,
          parameters: { binary_data_size: values.byteLength },
        },
      ],
    }),
  );
  reply.header('inference-header-content-length', String(json.length));
  reply.header('content-type', 'application/octet-stream');
  return Buffer.concat([json, Buffer.from(values.buffer, values.byteOffset, values.byteLength)]);
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`plain model route listening on ${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
