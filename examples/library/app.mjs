// batch() inside a Fastify app: each request asks for one embedding; calls that arrive together
// become one call of the model over a batch. Refusals are the library's error classes, which
// carry the HTTP status and Retry-After the app answers with.
import Fastify from 'fastify';
import { batch, BatchError } from 'batchline';

/** The client's mistake: its call rejects with it as it is, and Fastify answers its statusCode. */
class EmptyText extends Error {
  statusCode = 400;
}

/** A stand-in for a model: a 16-number vector per text, 50 ms a batch whatever its size. */
async function embedBatch(texts) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  return texts.map((text) =>
    text.length === 0
      ? new EmptyText('cannot embed an empty text') // fails this item alone
      : Array.from({ length: 16 }, (_, i) => Math.sin(text.charCodeAt(i % text.length) * (i + 1))),
  );
}

const embed = batch(embedBatch, { maxBatchSize: 16, batchWindowMs: 5, maxQueueSize: 64, requestTimeoutMs: 2000 });

// Warnings and errors as JSON lines on stderr (run.sh keeps them): a real app logs.
const app = Fastify({ logger: { level: 'warn' } });

// The one line that maps every refusal to its status: queue_full 429 (Retry-After), circuit_open
// and shutting_down 503, deadline_exceeded 504. (Fastify's own error handler would also use
// statusCode and headers; this one answers in batchline's error format.) The function's own
// errors (EmptyText) go to Fastify's, which answers their statusCode.
app.setErrorHandler((error, _request, reply) =>
  error instanceof BatchError
    ? reply
        .code(error.statusCode)
        .headers(error.headers)
        .send({ error: { code: error.code, message: error.message } })
    : reply.send(error),
);

app.post('/embed', async (request, reply) => {
  const text = request.body?.text;
  if (typeof text !== 'string') throw Object.assign(new Error('body: {"text": "…"}'), { statusCode: 400 });
  // A client that hangs up stops waiting: its call leaves the queue, or its result is dropped.
  // The response's 'close' tells: the request's own fired when its body was read, long before.
  const gone = new AbortController();
  reply.raw.once('close', () => reply.raw.writableFinished || gone.abort());
  try {
    return { embedding: await embed(text, { signal: gone.signal }) };
  } catch (error) {
    // No one is left to answer: a rethrown AbortError would be logged at level error, stack and all.
    if (!gone.signal.aborted) throw error;
    return reply.code(499).send(); // nginx's "client closed request"; Fastify writes nothing to the closed socket
  }
});

app.get('/stats', async () => embed.stats()); // the snapshot batchline serve shows at /v1/stats

const port = Number(process.env.PORT ?? 0); // 0: a free port
const url = await app.listen({ host: '127.0.0.1', port }).catch((error) => {
  if (error.code !== 'EADDRINUSE') throw error;
  // Said as batchline serve says it, not as a stack trace.
  console.error(
    `app: 127.0.0.1:${port} (PORT) is already in use (another server? choose another port, or leave PORT out)`,
  );
  process.exit(1);
});
console.log(`listening on ${url}`);

process.once('SIGTERM', async () => {
  await app.close(); // stop taking requests
  await embed.close({ drainMs: 2000 }); // answer what is queued
  console.log(`stopped after ${embed.stats().counts.batches} batches`);
});
