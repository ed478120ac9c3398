import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { BatchlineError } from '../errors.js';
import { deadlineExceeded } from '../outcome-errors.js';
import { decodeGrpcInferRequest, decodeModelInferRequest } from '../protocol/grpc-infer-request.js';
import { encodeGrpcInferResponse } from '../protocol/grpc-infer-response.js';
import type { OipRequest } from '../protocol/oip-decoded-request.js';
import type { SharedMemoryAccess } from '../protocol/shared-memory-parameters.js';
import { timeoutMsOf } from '../protocol/schedule-parameters.js';
import {
  type AdmissionContext,
  admitRows,
  answeredWithoutOutputs,
  deadlineCapMs,
  encodingFailure,
} from './admission.js';
import { oipRowName, withJsonRowsChecked } from './oip-protocol.js';
import { GrpcAnswer } from './grpc-answer.js';
import { requestIdFrom } from './request-id.js';
import type { Targets } from './target.js';

/** A call cancelled this close to its deadline (ms) was cancelled by its client's deadline: counted 504, not 499. */
const DEADLINE_CANCEL_SLACK_MS = 50;

/**
 * `ModelInfer`: the same way through the server as `/v2`'s inference, over gRPC. The message
 * names its model and version (`Targets.resolve`, the one resolution: 404 is NOT_FOUND, loading
 * or draining UNAVAILABLE), its rows are decoded against that version's model and admitted into
 * its batcher (`admitRows`: they share batches with HTTP requests' rows), and the call is
 * answered once, through a `GrpcAnswer`, when it is settled. Its deadline is the earlier of the
 * call's gRPC deadline and its `timeout` parameter, capped at --max-request-timeout-ms; its
 * `priority` parameter is its level. A call its client cancels has its rows cancelled. With
 * `sharedMemory` (`--allow-client-shm`), inputs and outputs may name registered regions.
 * Synchronous: the handler returns before the answer.
 */
export function modelInfer(
  targets: Targets,
  context: AdmissionContext,
  call: ServerUnaryCall<Buffer, Buffer>,
  reply: sendUnaryData<Uint8Array>,
  sharedMemory?: SharedMemoryAccess,
): void {
  const requestId = requestIdFrom(call.metadata.get('x-request-id')[0]);
  const answerWith = (counters: GrpcAnswer['counters']): GrpcAnswer =>
    new GrpcAnswer(call, reply, requestId, counters, context.logError);
  let message: ReturnType<typeof decodeModelInferRequest>;
  try {
    message = decodeModelInferRequest(call.request);
  } catch (error) {
    return void answerWith(targets.unattributed).error(error);
  }
  if (message.model_name === '') return void answerWith(targets.unattributed).error(targets.emptyName('model_name'));
  const target = targets.resolve({ name: message.model_name, version: message.model_version });
  const answer = answerWith(target.counters);
  if (target.refusal !== undefined) return void answer.error(target.refusal);
  const version = target.version;
  let decoded: OipRequest;
  let timeoutMs: number | undefined;
  try {
    decoded = withJsonRowsChecked(
      decodeGrpcInferRequest(message, version.model, version.config.maxBatchSize, sharedMemory),
      version.model,
    );
    const capMs = deadlineCapMs(version, decoded.schedule.priority, context);
    timeoutMs = deadlineMs(call, timeoutMsOf(decoded.schedule, capMs), capMs);
  } catch (error) {
    return void answer.error(error);
  }
  const schedule = { timeoutMs, priority: decoded.schedule.priority };
  const admitted = admitRows(
    version,
    requestId,
    decoded.items,
    schedule,
    context,
    (settlement) => {
      if (answeredWithoutOutputs(settlement, answer)) return;
      let encoded: Uint8Array;
      try {
        encoded = encodeGrpcInferResponse({
          modelName: version.name,
          modelVersion: String(version.version),
          id: decoded.id,
          outputs: decoded.outputs,
          rows: settlement.outputs,
        });
      } catch (error) {
        return void answer.error(encodingFailure(error, requestId, context), 'admitted');
      }
      answer.send(encoded);
    },
    (index) => oipRowName(version.model, index),
  );
  if (admitted instanceof BatchlineError) return void answer.error(admitted);
  if (answer.done) return;
  const rows = admitted;
  call.once('cancelled', () => {
    if (answer.done) return; // grpc-js says so after every answer, too
    // grpc-js answers DEADLINE_EXCEEDED itself at the call's deadline, which is this request's
    // too: the batcher expires its rows at the same instant and counts them timed out. The
    // client's own deadline passes earlier by the time its request took to arrive, and its cancel
    // may come first: one that near the deadline is the deadline's.
    const deadline = Number(call.getDeadline());
    if (Number.isFinite(deadline) && Date.now() >= deadline - DEADLINE_CANCEL_SLACK_MS)
      return answer.deadlinePassed(deadlineExceeded(timeoutMs ?? 0));
    for (const row of rows) version.batcher.cancel(row);
  });
}

/**
 * The request's deadline in ms from now: the earlier of the call's gRPC deadline and its
 * `timeout` parameter (`fromParameter`, capped already), both capped at `capMs` (deadlineCapMs);
 * undefined for the level's default when the call has neither.
 */
function deadlineMs(
  call: ServerUnaryCall<Buffer, Buffer>,
  fromParameter: number | undefined,
  capMs: number,
): number | undefined {
  const deadline = Number(call.getDeadline());
  if (!Number.isFinite(deadline)) return fromParameter;
  // A deadline already past still gets a positive one: the batcher expires it at once.
  const fromCall = Math.min(Math.max(deadline - Date.now(), 0.001), capMs);
  return fromParameter === undefined ? fromCall : Math.min(fromCall, fromParameter);
}
