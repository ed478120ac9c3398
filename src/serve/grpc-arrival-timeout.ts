import { type ServerInterceptor, ServerInterceptingCall, ServerListenerBuilder } from '@grpc/grpc-js';
import { BatchlineError } from '../errors.js';

/**
 * --body-timeout-ms on the gRPC listener: a call of one request (ModelInfer, the metadata and
 * repository calls) whose request message has not arrived whole within `timeoutMs` of the call's
 * start ends DEADLINE_EXCEEDED with the error table's `request_timeout` message, as an HTTP
 * request that trickles is answered 408. grpc-js waits for the message with no bound: a call
 * that announced a message and sent it a byte at a time, or nothing after its headers, was held
 * for ever (20,000 on one connection: +75 MB). Streams of requests (ModelStreamInfer, Watch) may
 * rightly wait between requests, and are left alone.
 */
export function arrivalTimeout(timeoutMs: number): ServerInterceptor {
  return (method, call) => {
    if (method.requestStream) return new ServerInterceptingCall(call);
    return new ServerInterceptingCall(call, {
      start: (next) => {
        const late = setTimeout(() => {
          const error = new BatchlineError('REQUEST_TIMEOUT');
          call.sendStatus({ code: error.grpcCode, details: error.message });
        }, timeoutMs);
        late.unref();
        const arrived = (): void => clearTimeout(late);
        next(
          new ServerListenerBuilder()
            .withOnReceiveMessage((message, nextMessage) => {
              arrived();
              nextMessage(message);
            })
            .withOnReceiveHalfClose((nextHalfClose) => {
              arrived();
              nextHalfClose();
            })
            .withOnCancel(arrived)
            .build(),
        );
      },
    });
  };
}
