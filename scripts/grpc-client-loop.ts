import * as grpc from '@grpc/grpc-js';
import { encodeModelInferRequest, modelInferRequestFromJson } from '../src/protocol/grpc-json-request.js';

/**
 * bench:loadgen's gRPC reference: grpc-js' client alone, `inFlight` ModelInfer calls kept going
 * over `connections` connections (a local subchannel pool each), the same request bytes bench
 * sends, answers not decoded. Argv: url connections inFlight warmupS durationS; prints the calls
 * answered per second of the measured span.
 */
const [url = '', connectionsText = '1', inFlightText = '1', warmupText = '1', durationText = '5'] =
  process.argv.slice(2);
const target = new URL(url).host;
const connections = Number(connectionsText);
const options = { 'grpc.use_local_subchannel_pool': 1 };
const clients = Array.from(
  { length: connections },
  () => new grpc.Client(target, grpc.credentials.createInsecure(), options),
);
const body = encodeModelInferRequest(
  modelInferRequestFromJson({ inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] }, 'm', ''),
);
const identity = (bytes: Buffer): Buffer => bytes;
const startMs = performance.now();
const measureFromMs = startMs + Number(warmupText) * 1000;
const endMs = measureFromMs + Number(durationText) * 1000;
let answered = 0;
let running = Number(inFlightText);

await new Promise<void>((resolve) => {
  const call = (slot: number): void => {
    const now = performance.now();
    if (now >= endMs) {
      if (--running === 0) resolve();
      return;
    }
    (clients[slot % connections] as grpc.Client).makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      identity,
      identity,
      body,
      new grpc.Metadata(),
      {},
      (error) => {
        if (error !== null) throw error;
        const at = performance.now();
        if (at >= measureFromMs && at < endMs) answered++;
        call(slot);
      },
    );
  };
  for (let slot = 0; slot < running; slot++) call(slot);
});
for (const client of clients) client.close();
process.stdout.write(`${answered / Number(durationText)}\n`);
