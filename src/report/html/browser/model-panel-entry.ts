/**
 * The simulate report's model panel (bundled into dist/browser/model-panel.js): the embedded
 * toy model run in the page on three typed features, answered as `POST /v1/infer` answers,
 * with serve's own input checks and the model's weights from src/model/toy-model.ts.
 */
import { TOY_BIAS, TOY_MODEL_VERSION, TOY_WEIGHTS } from '../../../model/toy-model.js';
import { answerToyRequest } from '../toy-model-answer.js';
import { el } from './dom.js';

const EXAMPLE = '0.2, 1.5, -0.3';

/** The shortest decimal that reads back as the same float32 (0.33333334 for 1/3). */
function float32Text(value: number): string {
  const single = Math.fround(value);
  for (let digits = 1; digits < 9; digits++) {
    const text = String(Number(single.toPrecision(digits)));
    if (Math.fround(Number(text)) === single) return text;
  }
  return String(Number(single.toPrecision(9)));
}

function start(): void {
  const host = document.getElementById('model-panel');
  if (host === null) return;
  const input = el('input', {
    type: 'text',
    value: EXAMPLE,
    spellcheck: 'false',
    autocomplete: 'off',
    'aria-label': 'three features',
  });
  const label = el('span', { class: 'label' });
  const score = el('span', { class: 'score' });
  const detail = el('span', { class: 'detail' });
  const request = el('code', { class: 'request' });
  const status = el('code', { class: 'status' });
  const reply = el('code', { class: 'reply' });

  const show = (): void => {
    const answer = answerToyRequest(input.value);
    const prediction = 'prediction' in answer.reply ? answer.reply.prediction : undefined;
    label.textContent = prediction?.label ?? 'refused';
    label.className = `label ${prediction?.label ?? 'refused'}`;
    score.textContent = prediction === undefined ? '' : String(prediction.score);
    detail.textContent =
      prediction === undefined
        ? 'error' in answer.reply
          ? answer.reply.error.message
          : ''
        : `logit ${float32Text(answer.logit as number)} · σ(logit) in float64 ${(answer.exactSigmoid as number).toPrecision(9)}`;
    request.textContent = answer.body;
    status.textContent = String(answer.status);
    reply.textContent = JSON.stringify(answer.reply);
  };
  input.addEventListener('input', show);

  const terms = TOY_WEIGHTS.map((w, i) => `${float32Text(w)}·x${i + 1}`).join(' + ');
  host.append(
    el('h2', {}, 'The toy model, run in this page'),
    el(
      'p',
      { class: 'counts' },
      `${TOY_MODEL_VERSION}, the model batchline serve serves when it is given none: logit = ${terms} + ${float32Text(TOY_BIAS)}, score = sigmoid(logit), in float32 as onnxruntime computes them (fused multiply-adds, its rational sigmoid clamped at ±18), so large logits saturate to exactly 0 or 1. The answer is what POST /v1/infer returns, but for its request_id; what serve refuses is refused here with its message.`,
    ),
    el('label', { class: 'features' }, 'Features ', input),
    el('div', { class: 'prediction', 'aria-live': 'polite' }, label, ' ', score, ' ', detail),
    el('pre', { class: 'exchange' }, 'POST /v1/infer ', request, '\n', status, ' ', reply),
  );
  show();
}

start();
