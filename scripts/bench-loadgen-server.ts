import Fastify from 'fastify';

/**
 * The trivial server of `npm run bench:loadgen`: Fastify's own benchmark route (GET / answering
 * {"hello":"world"}), no logging. Prints its port on stdout, then serves until killed.
 */
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${new URL(address).port}\n`);
