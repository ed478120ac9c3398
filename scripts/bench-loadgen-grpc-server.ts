import * as grpc from '@grpc/grpc-js';

/**
 * The trivial gRPC server of `npm run bench:loadgen`: the Open Inference Protocol's ModelInfer
 * path answering every call with an empty ModelInferResponse, the request bytes not even decoded.
 * Prints its port on stdout, then serves until killed.
 */
const server = new grpc.Server();
const empty = Buffer.alloc(0);
server.addService(
  {
    ModelInfer: {
      path: '/inference.GRPCInferenceService/ModelInfer',
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: Buffer) => value,
      requestDeserialize: (bytes: Buffer) => bytes,
      responseSerialize: (value: Buffer) => value,
      responseDeserialize: (bytes: Buffer) => bytes,
    },
  },
  { ModelInfer: (_call: unknown, done: grpc.sendUnaryData<Buffer>) => done(null, empty) },
);
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${port}\n`);
});
