// The official openai npm client against `ewgpu serve` (fake backend: the text of a reply is "0 1 2 ..."):
// chat, streaming, completions, errors, models, and the OpenAI shapes the client reads.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { fakeServer, TINY_ID } from './harness.mjs';

let srv, client;
before(async () => {
  srv = await fakeServer();
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });
});
after(async () => { await srv.stop(); });

const user = [{ role: 'user', content: 'Hello' }];

test('chat.completions.create: text, finish_reason, usage, the ewgpu extension', async () => {
  const r = await client.chat.completions.create({ model: TINY_ID, messages: user, max_tokens: 5 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, TINY_ID);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, '0 1 2 3 4 ');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 5);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 5);
  assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(r.ewgpu.outcome, 'completed');
  assert.ok(r.ewgpu.startedAt > 0 && r.ewgpu.finishedAt >= r.ewgpu.startedAt);
});

test('max_completion_tokens wins over max_tokens; the model may be omitted (the current one)', async () => {
  const r = await client.chat.completions.create({ messages: user, max_tokens: 9, max_completion_tokens: 2 });
  assert.equal(r.choices[0].message.content, '0 1 ');
});

test('streaming: role delta first, stable id and created, finish_reason, then usage; same text', async () => {
  const stream = await client.chat.completions.create({
    model: TINY_ID, messages: user, max_tokens: 6, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.ok(chunks.length >= 4);
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  for (const c of chunks) {
    assert.equal(c.id, chunks[0].id);
    assert.equal(c.created, chunks[0].created);
    assert.equal(c.object, 'chat.completion.chunk');
  }
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 6);
  const fin = chunks.at(-2);
  assert.equal(fin.choices[0].finish_reason, 'length');
  assert.equal(fin.ewgpu.outcome, 'completed');
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  const whole = await client.chat.completions.create({ model: TINY_ID, messages: user, max_tokens: 6 });
  assert.equal(text, whole.choices[0].message.content);
  // Without include_usage there is no usage chunk.
  const s2 = await client.chat.completions.create({ model: TINY_ID, messages: user, max_tokens: 2, stream: true });
  const c2 = [];
  for await (const c of s2) c2.push(c);
  assert.equal(c2.at(-1).choices[0].finish_reason, 'length');
  assert.ok(c2.every((c) => !c.usage));
});

test('completions: a raw prompt, streamed and not', async () => {
  const r = await client.completions.create({ model: TINY_ID, prompt: 'Once upon a time', max_tokens: 3 });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.choices[0].text, '0 1 2 ');
  assert.equal(r.choices[0].finish_reason, 'length');
  const s = await client.completions.create({ model: TINY_ID, prompt: 'Once upon a time', max_tokens: 3, stream: true });
  let text = '', reason = null;
  for await (const c of s) {
    text += c.choices[0]?.text ?? '';
    reason = c.choices[0]?.finish_reason ?? reason;
  }
  assert.equal(text, '0 1 2 ');
  assert.equal(reason, 'length');
});

test('logprobs and top_logprobs in OpenAI shape', async () => {
  const r = await client.chat.completions.create({ model: TINY_ID, messages: user, max_tokens: 3, logprobs: true, top_logprobs: 2 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 3);
  for (const t of content) {
    assert.equal(typeof t.token, 'string');
    assert.equal(typeof t.logprob, 'number');
    assert.ok(Array.isArray(t.bytes) && Array.isArray(t.top_logprobs));
  }
});

test('errors: OpenAI error classes, status, code and param', async () => {
  const cases = [
    [{ model: 'no-such-model', messages: user }, OpenAI.NotFoundError, 404, 'UNKNOWN_MODEL', 'model'],
    [{ model: TINY_ID, messages: user, max_tokens: 'ten' }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'max_tokens'],
    [{ model: TINY_ID, messages: user, max_tokens: 2 ** 40 }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'max_tokens'],
    [{ model: TINY_ID, messages: user, temperature: 7 }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'temperature'],
    [{ model: TINY_ID, messages: [] }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'messages'],
    [{ model: TINY_ID, messages: [{ role: 'robot', content: 'x' }] }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'messages[0].role'],
    [{ model: TINY_ID, messages: user, n: 2 }, OpenAI.BadRequestError, 400, 'UNSUPPORTED', 'n'],
    [{ model: TINY_ID, messages: user, response_format: { type: 'grammar' } }, OpenAI.BadRequestError, 400, 'UNSUPPORTED', 'response_format.type'],
    [{ model: TINY_ID, messages: user, response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'integer', minimum: 1 } } } },
      OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'response_format.json_schema.schema'],
    [{ model: TINY_ID, messages: user, tools: [{ type: 'function', function: { name: 'f' } }] }, OpenAI.BadRequestError, 400, 'UNSUPPORTED', 'tools'],
    [{ model: TINY_ID, messages: user, frobnicate: 1 }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'frobnicate'],
    [{ model: TINY_ID, messages: user, stop: [1] }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'stop'],
    [{ model: TINY_ID, messages: user, priority: 'urgent' }, OpenAI.BadRequestError, 400, 'BAD_REQUEST', 'priority'],
  ];
  for (const [body, cls, status, code, param] of cases) {
    await assert.rejects(client.chat.completions.create(body), (e) => {
      assert.ok(e instanceof cls, `${JSON.stringify(body)}: ${e}`);
      assert.equal(e.status, status);
      assert.equal(e.code, code);
      assert.equal(e.param, param);
      assert.ok(e.message.includes(param.split('[')[0]), e.message);
      return true;
    });
  }
  // A stream that cannot start is an error response, not a stream.
  await assert.rejects(client.chat.completions.create({ model: 'nope', messages: user, stream: true }), OpenAI.NotFoundError);
  await assert.rejects(client.completions.create({ model: TINY_ID, prompt: '' }), OpenAI.BadRequestError);
});

test('models: list and retrieve', async () => {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  assert.deepEqual(ids, [TINY_ID]);
  assert.equal(list.data[0].object, 'model');
  assert.equal(list.data[0].owned_by, 'ewgpu');
  const m = await client.models.retrieve(TINY_ID);
  assert.equal(m.id, TINY_ID);
  assert.equal(m.ewgpu.status, 'ready');
  await assert.rejects(client.models.retrieve('nope'), OpenAI.NotFoundError);
});
