// Version 1 of the greeter: a code model whose items are JSON values.
export const inputSchema = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, maxLength: 100 } },
  required: ['name'],
};

let instance = 0;
export function initialize(context) {
  instance = context.instance; // which of the version's workers this is
}

export async function execute(items) {
  return items.map(({ name }) => ({ greeting: `Hello, ${name}`, version: 1, worker: instance }));
}
