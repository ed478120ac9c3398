// Sends 24 requests at once to the quickstart server and shows how they were batched.
const url = process.argv[2] ?? 'http://127.0.0.1:8080';
const texts = Array.from({ length: 24 }, (_, i) => `Request number ${i + 1} asks how many words it has`);

const answers = await Promise.all(
  texts.map(async (text) => {
    const response = await fetch(`${url}/models/words/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: { text } }),
    });
    return { status: response.status, body: await response.json() };
  }),
);
for (const [i, { status, body }] of answers.entries())
  if (i < 3 || i === answers.length - 1) console.log(status, JSON.stringify(body.outputs));

const bad = await fetch(`${url}/models/words/predict`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ data: { text: 42 } }),
});
console.log(bad.status, (await bad.json()).error.message);

const metrics = await (await fetch(`${url}/metrics`, { headers: { accept: 'application/json' } })).json();
const words = metrics.models.find((model) => model.name === 'words');
console.log(
  `answered ${words.ok} of ${words.requests} in ${words.batch_size.batches} batches (mean size ${words.batch_size.mean})`,
);
if (answers.some(({ status }) => status !== 200) || bad.status !== 400) process.exit(1);
