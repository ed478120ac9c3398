import type { sendUnaryData, ServerDuplexStream, ServerUnaryCall, ServiceError } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { GRPC_STATUS } from '../grpc-status.js';
import { inferenceType } from '../protocol/grpc-proto-root.js';
import type { HeldAnswerCall } from './grpc-answer.js';

type StreamCall = ServerDuplexStream<Buffer, Uint8Array>;

/** The status details of a stream still open when the server closes. */
const STREAM_CLOSED_AT_SHUTDOWN = 'shutting down: the server closed this stream; send further requests on a new one';

/** One request of a stream: its answer (encoded `ModelStreamInferResponse`) once it has one. */
interface Slot {
  answer: Uint8Array | undefined;
  readonly onCancel: Set<() => void>;
  /** Counts its answer as written or not (HeldAnswerCall), once. */
  count: ((written: boolean) => void) | undefined;
}

function counted(slot: Slot, written: boolean): void {
  const count = slot.count;
  slot.count = undefined;
  count?.(written);
}

/** The requests of one stream read and not yet answered, at most: the stream is read no further until fewer wait. */
export const STREAM_MAX_UNANSWERED = 1024;

/** The `ModelInferRequest` field that holds the request's id (Triton echoes it in a failed request's response). */
const ID_FIELD = 3;
/** `ModelStreamInferResponse.infer_response`: field 2, length-delimited. */
const INFER_RESPONSE_TAG = (2 << 3) | 2;

/**
 * Triton's `ModelStreamInfer`: a bidirectional stream of `ModelInferRequest`s, each handled as a
 * `ModelInfer` call is (the same resolution, admission, batchers, deadline and
 * counting) and answered on the stream as a `ModelStreamInferResponse`: its `infer_response`,
 * or its `error_message` with the request's `id` when it failed, the stream going on. As
 * Triton answers a model that is not decoupled, answers go out in the order of the requests.
 * The stream ends (OK) once its client has half-closed and every request has its answer; a
 * stream its client cancels has its requests' rows cancelled. `endAll` ends the open streams
 * (UNAVAILABLE), for a shutdown once the drain is over (an open stream would hold the
 * listener's graceful close).
 */
export class StreamInferCalls {
  private readonly open = new Set<StreamCall>();

  /** Serves the stream `call`, each request through `unary` (the service's `ModelInfer`). */
  handle(
    call: StreamCall,
    unary: (call: ServerUnaryCall<Buffer, Buffer>, reply: sendUnaryData<Uint8Array>) => void,
  ): void {
    this.open.add(call);
    const slots: Slot[] = [];
    let halfClosed = false;
    const finishIfDone = (): void => {
      if (halfClosed && slots.length === 0 && this.open.delete(call)) call.end();
    };
    // A client that sends faster than it reads its answers (or than they are computed) is read
    // no further while its answers back up or STREAM_MAX_UNANSWERED requests wait for theirs:
    // HTTP/2's flow control then holds its requests on its side. Read on, the server held every
    // request and answer of a client that stopped reading (157,000 requests in 20 s: +89 MB).
    let backedUp = false;
    let paused = false;
    const pauseOrResume = (): void => {
      const hold = backedUp || slots.length >= STREAM_MAX_UNANSWERED;
      if (hold !== paused) {
        paused = hold;
        if (hold) call.pause();
        else call.resume();
      }
    };
    const flush = (): void => {
      while (slots.length > 0 && slots[0]!.answer !== undefined) {
        const slot = slots.shift()!;
        // A stream cancelled, or ended by a shutdown, takes no more writes.
        const open = this.open.has(call);
        if (open && !call.write(slot.answer!) && !backedUp) {
          backedUp = true;
          call.once('drain', () => {
            backedUp = false;
            pauseOrResume();
          });
        }
        counted(slot, open);
      }
      pauseOrResume();
      finishIfDone();
    };
    call.on('data', (bytes: Buffer) => {
      const slot: Slot = { answer: undefined, onCancel: new Set(), count: undefined };
      slots.push(slot);
      const reply: sendUnaryData<Uint8Array> = (error, message) => {
        if (slot.answer !== undefined) return;
        slot.onCancel.clear();
        slot.answer = error === null ? streamResponse(message!) : errorResponse(error, bytes);
        flush();
      };
      unary(requestOf(call, bytes, slot), reply);
      pauseOrResume();
    });
    call.on('end', () => {
      halfClosed = true;
      finishIfDone();
    });
    call.once('cancelled', () => {
      this.open.delete(call);
      for (const slot of slots) {
        for (const cancel of slot.onCancel) cancel();
        // Answered, but held behind an earlier request: never written.
        if (slot.answer !== undefined) counted(slot, false);
      }
    });
  }

  /**
   * Ends every open stream (after a drain, the requests they carried have their answers) with
   * UNAVAILABLE: its client has not half-closed it, so it may send more, and an OK would tell it
   * the stream was done with. Triton's client then keeps the stream for active and its next
   * requests go unanswered and unrefused; an error status reaches its callback and marks the stream
   * dead, as Triton's own shutdown (which cancels the streams left) does.
   */
  endAll(): void {
    for (const call of [...this.open]) {
      this.open.delete(call);
      call.emit('error', { code: GRPC_STATUS.UNAVAILABLE, details: STREAM_CLOSED_AT_SHUTDOWN });
    }
  }
}

/**
 * One request of the stream as the unary handler sees a call: its bytes, the stream's metadata
 * and deadline, cancelled when the stream is; a 'cancelled' listener belongs to the request
 * and is dropped with its answer (a stream carries many requests: listeners on the stream itself
 * would pile up).
 */
function requestOf(call: StreamCall, bytes: Buffer, slot: Slot): ServerUnaryCall<Buffer, Buffer> {
  return {
    request: bytes,
    metadata: call.metadata,
    getDeadline: () => call.getDeadline(),
    getPath: () => call.getPath(),
    get cancelled() {
      return call.cancelled;
    },
    once(event: string, listener: () => void) {
      if (event === 'cancelled') slot.onCancel.add(listener);
      return this;
    },
    countWhenWritten(count) {
      slot.count = count;
    },
  } satisfies HeldAnswerCall & Record<string, unknown> as unknown as ServerUnaryCall<Buffer, Buffer>;
}

/** `ModelStreamInferResponse{infer_response}` around an encoded `ModelInferResponse`, without decoding it again. */
function streamResponse(inferResponse: Uint8Array): Uint8Array {
  return protobuf.Writer.create().uint32(INFER_RESPONSE_TAG).bytes(inferResponse).finish();
}

/** `ModelStreamInferResponse{error_message, infer_response{id}}`, as Triton answers a request of the stream that failed. */
function errorResponse(error: Partial<ServiceError>, request: Uint8Array): Uint8Array {
  const type = inferenceType('ModelStreamInferResponse');
  return type.encode({ error_message: error.details ?? '', infer_response: { id: requestIdOf(request) } }).finish();
}

/** The `id` of an encoded `ModelInferRequest`, read without decoding its tensors ('' when absent or undecodable). */
function requestIdOf(request: Uint8Array): string {
  try {
    const reader = protobuf.Reader.create(request);
    let id = '';
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag >>> 3 === ID_FIELD && (tag & 7) === 2) id = reader.string();
      else reader.skipType(tag & 7);
    }
    return id;
  } catch {
    return '';
  }
}
