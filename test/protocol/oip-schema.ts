import { Ajv, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/**
 * The Open Inference Protocol's own OpenAPI description (fixtures/open_inference_rest.yaml), its
 * component schemas compiled with ajv. `schemaFor('inference_response')` validates a body.
 */
const document = parse(readFileSync(new URL('./fixtures/open_inference_rest.yaml', import.meta.url), 'utf8')) as {
  components: { schemas: Record<string, unknown> };
};
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'oip', components: document.components });
// The binary tensor extension replaces an output's `data` by `parameters.binary_data_size`;
// the description knows only JSON data, so an answer with binary data is checked against the
// description's inference_response with each output a response_output, or a metadata_tensor
// (name, datatype, shape) whose parameters give binary_data_size.
ajv.addSchema({
  $id: 'oip-binary',
  type: 'object',
  required: ['model_name', 'outputs'],
  properties: {
    model_name: { type: 'string' },
    model_version: { type: 'string' },
    id: { type: 'string' },
    parameters: { $ref: 'oip#/components/schemas/parameters' },
    outputs: {
      type: 'array',
      items: {
        anyOf: [
          { $ref: 'oip#/components/schemas/response_output' },
          {
            allOf: [{ $ref: 'oip#/components/schemas/metadata_tensor' }],
            required: ['parameters'],
            properties: {
              parameters: {
                type: 'object',
                required: ['binary_data_size'],
                properties: { binary_data_size: { type: 'integer', minimum: 0 } },
              },
            },
          },
        ],
      },
    },
  },
});

const cache = new Map<string, ValidateFunction>();

/** A validator for `#/components/schemas/<name>`; `binary_inference_response` for an answer with binary data. */
export function schemaFor(name: string): ValidateFunction {
  let validate = cache.get(name);
  if (validate === undefined) {
    validate = ajv.getSchema(name === 'binary_inference_response' ? 'oip-binary' : `oip#/components/schemas/${name}`)!;
    cache.set(name, validate);
  }
  return validate;
}

/** Throws with ajv's errors unless `body` satisfies the schema `name`. */
export function expectSchema(name: string, body: unknown): void {
  const validate = schemaFor(name);
  if (!validate(body))
    throw new Error(`${name}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`);
}
