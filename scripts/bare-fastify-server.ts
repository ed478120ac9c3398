import Fastify from 'fastify';

/**
 * The reference for `npm run bench:serve`: a bare Fastify route that parses the same JSON body
 * and returns a constant prediction, with no queue, no batching and no model.
 */
const app = Fastify({ logger: false });
const reply = {
  request_id: '00000000-0000-0000-0000-000000000000',
  prediction: { label: 'positive', score: 0.682799, model_version: 'toy-logistic-v1' },
};
app.post('/v1/infer', async (request) => {
  const body = request.body as { inputs?: unknown };
  if (!Array.isArray(body?.inputs)) throw new Error('no inputs');
  return reply;
});
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`bare fastify listening on ${address}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
