import { request } from 'undici';

/** The input the embedded toy model (toy-logistic-v1) takes: three features. */
export const TOY_MODEL_BODY = '{"inputs":[0.2,1.5,-0.3]}';
export const TOY_MODEL_VERSION = 'toy-logistic-v1';

export type TargetKind =
  | { kind: 'toy-model' }
  | { kind: 'batchline-other-model'; version: string }
  | { kind: 'unknown' };

/**
 * Asks the target's origin for batchline's `GET /v1/stats` once, to learn whether it is a
 * batchline server and which model it serves. Anything but batchline's shape is `unknown`.
 */
export async function probeTarget(url: string, timeoutMs = 2000): Promise<TargetKind> {
  try {
    const response = await request(new URL('/v1/stats', url), {
      method: 'GET',
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      return { kind: 'unknown' };
    }
    const stats = (await response.body.json()) as { model?: { version?: unknown; inputs?: unknown } } | null;
    const model = stats?.model;
    if (model === undefined || model === null || typeof model !== 'object' || !('inputs' in model)) return { kind: 'unknown' };
    if (model.version === TOY_MODEL_VERSION) return { kind: 'toy-model' };
    return { kind: 'batchline-other-model', version: String(model.version) };
  } catch {
    return { kind: 'unknown' };
  }
}
