import { BatchlineError, errorBody } from '../../errors.js';
import { decodeInputs } from '../../model/decode-inputs.js';
import { TOY_INPUT_SPEC, TOY_MODEL_VERSION, toyPrediction } from '../../model/toy-model.js';
import { stableSigmoid, toyModelScore } from '../../model/toy-model-float32.js';

/** What `POST /v1/infer` with the embedded model answers, worked out in the page. */
export interface ToyAnswer {
  /** The request body the page answers, byte for byte what it would send. */
  body: string;
  status: number;
  /** The reply's JSON, but for the `request_id` the server adds. */
  reply: { prediction: { label: string; score: number; model_version: string } } | ReturnType<typeof errorBody>;
  /** For an answer: the float32 logit, and the sigmoid of it in float64 for comparison. */
  logit?: number;
  exactSigmoid?: number;
}

/**
 * The model panel's answer to what was typed: the features as a JSON array (`0.2, 1.5, -0.3`
 * gets its brackets; `[…]` and `{"features": […]}` are taken as they are) sent as
 * `{"inputs": …}`. Refused as serve refuses it, by serve's own decoder and error table:
 * invalid JSON, anything but three numbers, a number beyond float32's range or not finite.
 */
export function answerToyRequest(typed: string): ToyAnswer {
  const text = typed.trim();
  const inputs = /^[[{"]/.test(text) ? text : `[${text}]`;
  const body = `{"inputs": ${inputs}}`;
  let parsed: { inputs?: unknown };
  try {
    parsed = JSON.parse(body) as { inputs?: unknown };
  } catch (error) {
    // serve's reader words its own message; the code is the same.
    return refused(body, new BatchlineError('BAD_JSON', (error as Error).message));
  }
  let features: ArrayLike<number>;
  try {
    features = decodeInputs(parsed.inputs, [TOY_INPUT_SPEC])[TOY_INPUT_SPEC.name]?.data as Float32Array;
  } catch (error) {
    if (error instanceof BatchlineError) return refused(body, error);
    throw error;
  }
  const { logit, score } = toyModelScore(features);
  const { label, score: rounded } = toyPrediction(score);
  return {
    body,
    status: 200,
    reply: { prediction: { label, score: rounded, model_version: TOY_MODEL_VERSION } },
    logit,
    exactSigmoid: stableSigmoid(logit),
  };
}

function refused(body: string, error: BatchlineError): ToyAnswer {
  return { body, status: error.httpStatus, reply: errorBody(error.code, error.message) };
}
