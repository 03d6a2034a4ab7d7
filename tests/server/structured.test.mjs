// Structured output end to end: `ewgpu serve` on a random-weight tiny model (which writes no JSON by itself) with
// response_format json_schema / json_object, through the official openai client. For every schema of the suite,
// at temperature 0 and 1, the text must parse, validate against the schema with ajv (an independent validator),
// and end exactly when the document is complete (finish_reason "stop", one token per byte of the text: the tiny
// tokenizer is byte-level, so no token came after the document). Every schema of the suite is bounded (strings
// have a maxLength, arrays a maxItems, no recursion), so it is complete well within the budget; unbounded
// documents are tested for their length outcome instead. One server for the whole file (SwiftShader compiles
// each pipeline for seconds).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { startServer, get, EWGPU, TINY } from './harness.mjs';

const ADAPTER = process.env.EWGPU_ADAPTER ?? 'swiftshader';
const BUDGET = 512;  // max_tokens: above the longest document any schema below allows
let srv, client, model;
before(async () => {
  srv = await startServer({ bin: EWGPU, args: ['serve', '--model', TINY, '--adapter', ADAPTER, '--rows', '8', '--quiet'],
                            timeoutMs: 300000 });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 1200000 });
  model = (await client.models.list()).data[0].id;
});
after(async () => { await srv.stop(); });

// The formats the grammar writes, checked by ajv with the RFC 3339 / RFC 4122 shapes (ajv has no formats built in).
function validator() {
  const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
  ajv.addFormat('date', /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/);
  ajv.addFormat('time', /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/);
  ajv.addFormat('date-time', /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/);
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  return ajv;
}

const str = (maxLength, extra = {}) => ({ type: 'string', maxLength, ...extra });
const SCHEMAS = [
  { type: 'boolean' },
  { type: 'null' },
  { type: 'integer' },
  { type: 'number' },
  str(8),
  str(5, { minLength: 2 }),
  { enum: ['red', 'green', 'blue'] },
  { const: { ok: true } },
  { type: ['integer', 'null'] },
  { type: 'string', format: 'date' },
  { type: 'string', format: 'time' },
  { type: 'string', format: 'date-time' },
  { type: 'string', format: 'uuid' },
  { type: 'array', items: { type: 'integer' }, maxItems: 4 },
  { type: 'array', items: { type: 'boolean' }, minItems: 2, maxItems: 3 },
  { type: 'array', items: { enum: [1, 2, 3] }, minItems: 1, maxItems: 5 },
  { type: 'object', properties: { name: str(6), age: { type: 'integer' } }, required: ['name', 'age'] },
  { type: 'object', properties: { a: { type: 'boolean' }, b: { type: 'null' } } },
  { type: 'object', required: ['user'],
    properties: { user: { type: 'object', required: ['id'],
                          properties: { id: { type: 'integer' }, tags: { type: 'array', items: str(3), maxItems: 2 } } } } },
  { anyOf: [{ type: 'integer' }, str(4)] },
  { anyOf: [
    { type: 'object', properties: { kind: { const: 'a' }, x: { type: 'integer' } }, required: ['kind', 'x'] },
    { type: 'object', properties: { kind: { const: 'b' }, y: { type: 'boolean' } }, required: ['kind', 'y'] }] },
  { $defs: { point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] } },
    type: 'object', properties: { a: { $ref: '#/$defs/point' }, b: { $ref: '#/$defs/point' } }, required: ['a', 'b'] },
  { type: 'object', properties: { status: { enum: ['ok', 'error'] }, code: { type: 'integer' } },
    required: ['status', 'code'], additionalProperties: false },
  { type: 'array', minItems: 1, maxItems: 3,
    items: { type: 'object', properties: { id: { type: 'integer' }, done: { type: 'boolean' } }, required: ['id', 'done'] } },
  { type: 'string', enum: ['x', 'y'] },
  { const: 'héllo ☃' },
  { enum: [null, true, 0, 'zero', [], {}] },
  { type: 'object', properties: { t: { type: 'number' } }, required: ['t'] },
  { type: 'array', items: { type: 'array', items: { type: 'integer' }, maxItems: 2 }, maxItems: 2 },
  { type: ['string', 'number', 'boolean'], maxLength: 3 },
  { type: 'object', properties: { 'quoted "key"': { type: 'boolean' }, 'ünï\\': { type: 'null' } },
    required: ['quoted "key"', 'ünï\\'] },
  { type: 'object', additionalProperties: false, required: ['name', 'email'],
    properties: { name: str(10), email: { type: ['string', 'null'], maxLength: 10 } } },
  { title: 'Annotated', description: 'annotations constrain nothing', type: 'object',
    properties: { n: { type: 'integer', description: 'a number', default: 3, examples: [1] } }, required: ['n'] },
  { type: 'array', items: { anyOf: [{ type: 'null' }, { type: 'string', format: 'date' }] }, maxItems: 2 },
];

// The suite goes through /v1/completions with a one-token prompt (prefill on SwiftShader costs more than the
// document); chat, WebLLM's shape and streaming are checked below.
async function structured(schema, temperature, i, extra = {}) {
  return client.completions.create({
    model, prompt: 'J', max_tokens: BUDGET, temperature, seed: 100 + i,
    response_format: { type: 'json_schema', json_schema: { name: `case_${i}`, schema, strict: true } }, ...extra,
  });
}

function checkDocument(schema, r, where) {
  const text = r.choices[0].message ? r.choices[0].message.content : r.choices[0].text;
  assert.equal(r.choices[0].finish_reason, 'stop', `${where}: ${JSON.stringify(text)}`);
  let doc;
  assert.doesNotThrow(() => { doc = JSON.parse(text); }, `${where}: not JSON: ${JSON.stringify(text)}`);
  const validate = validator().compile(schema);
  assert.ok(validate(doc), `${where}: ${JSON.stringify(text)} fails the schema: ${JSON.stringify(validate.errors)}`);
  // Byte-level tokenizer: one token per byte. Equal counts mean the row stopped at the document's last byte.
  assert.equal(r.usage.completion_tokens, Buffer.byteLength(text), `${where}: ${JSON.stringify(text)}`);
  return text;
}

test(`${SCHEMAS.length} schemas at temperature 0 and 1: valid documents that end where the document does`, async () => {
  assert.ok(SCHEMAS.length >= 30);
  for (const temperature of [0, 1]) {
    const results = await Promise.all(SCHEMAS.map((s, i) => structured(s, temperature, i)));
    const texts = results.map((r, i) => checkDocument(SCHEMAS[i], r, `schema ${i} at T=${temperature}`));
    // The model does not write these by itself: the documents differ between schemas.
    assert.ok(new Set(texts).size > SCHEMAS.length / 2, texts.join('\n'));
  }
});

test('json_object (OpenAI) and a schema as a string (WebLLM): objects, or the budget runs out', async () => {
  for (const temperature of [0, 1]) {
    const r = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'JSON please' }], max_tokens: 48, temperature, seed: 7,
      response_format: { type: 'json_object' },
    });
    const text = r.choices[0].message.content;
    if (r.choices[0].finish_reason === 'stop') {
      const doc = JSON.parse(text);
      assert.ok(doc && typeof doc === 'object' && !Array.isArray(doc), text);
    } else {
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.equal(r.usage.completion_tokens, 48);
      assert.ok(text.startsWith('{'), text);
    }
  }
  const schema = { type: 'object', properties: { city: str(5) }, required: ['city'] };
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'x' }], max_tokens: BUDGET, temperature: 1, seed: 3,
    response_format: { type: 'json_object', schema: JSON.stringify(schema) },
  });
  checkDocument(schema, r, 'WebLLM shape');
});

test('an unbounded string runs out of budget: finish_reason length, an unfinished document', async () => {
  const r = await structured({ type: 'string' }, 1, 99, { max_tokens: 6 });
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 6);
  assert.ok(r.choices[0].text.startsWith('"'));
});

test('chat, streaming and a grammar row beside free rows', async () => {
  const schema = { type: 'object', properties: { k: { enum: ['a', 'b'] }, v: str(4) }, required: ['k', 'v'] };
  const rf = { type: 'json_schema', json_schema: { name: 'kv', schema } };
  const whole = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 's' }],
                                                       max_tokens: BUDGET, temperature: 1, seed: 9, response_format: rf });
  const s = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 's' }], max_tokens: BUDGET,
                                                   temperature: 1, seed: 9, response_format: rf, stream: true });
  let text = '';
  for await (const ch of s) text += ch.choices[0]?.delta?.content ?? '';
  assert.equal(text, checkDocument(schema, whole, 'streamed'));
  // Free rows decoding beside grammar rows give the text they give alone (greedy).
  const free = (i) => client.completions.create({ model, prompt: `Story ${i}`, max_tokens: 16, temperature: 0 });
  const alone = (await free(1)).choices[0].text;
  const [together] = await Promise.all([free(1), structured(schema, 0, 1), structured(schema, 1, 2)]);
  assert.equal(together.choices[0].text, alone);
  const status = await get(`${srv.url}/v1/engine/status`);
  assert.equal(status.json.features.structuredOutput, true);
});
