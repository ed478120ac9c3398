import { clipped } from '../message-text.js';
import { asJsonText, JsonNumbers } from '../model/json-numbers.js';
import { classificationCountOf, classificationOf } from './classification.js';
import type { OipModelView, RequestedOutput } from './oip-decoded-request.js';
import { badInput as bad, objectOrEmpty } from './oip-fields.js';
import { CLIENT_SHM_DISABLED, type SharedMemoryAccess, sharedMemoryRefOf } from './shared-memory-parameters.js';

/**
 * The outputs a request names (every output when none: no `outputs`, or an empty list, as
 * Triton reads it and as gRPC cannot tell apart), each binary or not by its own `binary_data`,
 * else the request's `binary_data_output`, else `binaryByDefault` (REST answers JSON, gRPC raw
 * contents).
 */
export function requestedOutputs(
  outputs: unknown,
  parameters: Record<string, unknown>,
  model: OipModelView,
  binaryByDefault = false,
  sharedMemory?: SharedMemoryAccess,
): RequestedOutput[] {
  const allBinary = booleanParameter(parameters.binary_data_output, 'binary_data_output', '') ?? binaryByDefault;
  if (outputs === undefined || (Array.isArray(outputs) && outputs.length === 0))
    return model.outputs.map((spec) => ({ spec, binary: allBinary }));
  if (!Array.isArray(outputs)) throw bad('"outputs" must be an array of requested outputs');
  const named = new Set<string>();
  return outputs.map((output): RequestedOutput => {
    if (typeof output !== 'object' || output === null || Array.isArray(output) || output instanceof JsonNumbers)
      throw bad('every entry of "outputs" must be an object with a "name"');
    const { name } = output as Record<string, unknown>;
    const spec = model.outputs.find((s) => s.name === name);
    if (spec === undefined)
      throw bad(
        `unknown output ${typeof name === 'string' ? `"${clipped(name)}"` : '(no name)'}; the model has ${model.outputs.map((s) => `"${s.name}"`).join(', ')}`,
      );
    // Triton refuses it ("output '…' already exists in request"); answered, it came twice.
    if (named.has(spec.name)) throw bad(`output "${spec.name}" is asked for twice`);
    named.add(spec.name);
    const outputParameters = objectOrEmpty(
      (output as Record<string, unknown>).parameters,
      `the "parameters" of output "${spec.name}"`,
    );
    const binary = booleanParameter(outputParameters.binary_data, 'binary_data', `output "${spec.name}": `);
    const inRegion = sharedMemoryRefOf(outputParameters, `output "${spec.name}"`);
    if (inRegion !== undefined) {
      // Triton's words: the classification is made from the output, and binary data is the body's.
      if (outputParameters.classification !== undefined)
        throw bad(`output "${spec.name}": Output can't set both 'shared_memory_region' and 'classification'`);
      if (binary === true)
        throw bad(`output "${spec.name}": Output can't set both 'shared_memory_region' and 'binary_data'`);
      if (sharedMemory === undefined) throw bad(`output "${spec.name}": ${CLIENT_SHM_DISABLED}`);
      sharedMemory.check(inRegion);
      return { spec, binary: false, sharedMemory: { ref: inRegion, access: sharedMemory } };
    }
    const classes = classificationCountOf(outputParameters.classification, spec.name);
    if (classes === undefined) return { spec, binary: binary ?? allBinary };
    return { spec, binary: binary ?? allBinary, classification: classificationOf(spec, classes, model.labels) };
  });
}

/**
 * A boolean parameter, undefined when not given. Any other type is refused, as Triton refuses it
 * ("Unable to parse 'binary_data'"): read as not given, `"yes"` or `1` silently meant its opposite.
 */
function booleanParameter(value: unknown, name: string, prefix: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw bad(`${prefix}the "${name}" parameter must be true or false, got ${asJsonText(value)}`);
}
