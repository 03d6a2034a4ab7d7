// POST /v1/embeddings through `ewgpu serve` with a tiny random bert folder (`ewgpu make-tiny --arch bert`) (SwiftShader where there is no GPU) and the
// official openai client: its default request (base64 on the wire, decoded by the client) and encoding_format
// "float" give the same unit vectors; batches equal single requests; /v1/models lists the model; bad input is a
// 400 naming the field, a long input a 400 CONTEXT_TOO_LONG, and a chat model asked for embeddings (and the embedding model asked
// to chat) a 400 naming `model`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import OpenAI from 'openai';
import { startServer, EWGPU, SOURCE_DIR, post } from './harness.mjs';

const ADAPTER = process.env.EWGPU_ADAPTER ?? 'swiftshader';
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'ewgpu-embed-'));
const BERT = path.join(TMP, 'bert_tiny');
const CHAT = path.join(SOURCE_DIR, 'tests/fixtures/llama_tiny/q4f16_1');
let srv, client;
before(async () => {
  const made = spawnSync(EWGPU, ['make-tiny', BERT, '--arch', 'bert', '--tokenizer',
                                 path.join(SOURCE_DIR, 'tests/fixtures/bert_tokenizer/tokenizer.json')], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  srv = await startServer({ bin: EWGPU, args: ['serve', '--model', BERT, '--model', CHAT, '--adapter', ADAPTER, '--rows', '1', '--quiet'],
                            timeoutMs: 300000 });
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300000 });
});
after(async () => { await srv.stop(); fs.rmSync(TMP, { recursive: true, force: true }); });

const model = 'bert_tiny';
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

test('the openai client: default (base64) and float give the same unit vectors, batch == alone', async () => {
  const ids = (await client.models.list()).data.map((m) => m.id);
  assert.ok(ids.includes(model), ids.join(','));
  const texts = ['Hello, World!', 'The quick brown fox.'];
  const b64 = await client.embeddings.create({ model, input: texts });
  assert.equal(b64.object, 'list');
  assert.equal(b64.data.length, 2);
  const flt = await client.embeddings.create({ model, input: texts, encoding_format: 'float' });
  for (let i = 0; i < 2; i++) {
    assert.equal(b64.data[i].index, i);
    assert.equal(b64.data[i].embedding.length, 64);
    assert.deepEqual(Array.from(b64.data[i].embedding), flt.data[i].embedding.map((x) => Math.fround(x)));
    assert.ok(Math.abs(norm(flt.data[i].embedding) - 1) < 1e-5);
  }
  assert.equal(flt.usage.prompt_tokens, 6 + 7);  // [CLS] hello , world ! [SEP]; [CLS] the quick brown fox . [SEP]
  assert.equal(flt.usage.total_tokens, flt.usage.prompt_tokens);
  const alone = await client.embeddings.create({ model, input: texts[1], encoding_format: 'float' });
  const d = alone.data[0].embedding.map((x, k) => Math.abs(x - flt.data[1].embedding[k]));
  assert.ok(Math.max(...d) < 1e-6, `batch vs alone ${Math.max(...d)}`);
  const tokens = await client.embeddings.create({ model, input: [[2, 22, 6, 23, 7, 3]], encoding_format: 'float' });
  assert.deepEqual(tokens.data[0].embedding, flt.data[0].embedding);
});

test('errors: 400 naming the field, CONTEXT_TOO_LONG for a long input, 400 model for the wrong kind of model', async () => {
  const url = `${srv.url}/v1/embeddings`;
  for (const [body, status, param] of [
    [{ model }, 400, 'input'],
    [{ model, input: '' }, 400, 'input'],
    [{ model, input: ['a', 7] }, 400, 'input[1]'],
    [{ model, input: 'a', encoding_format: 'int8' }, 400, 'encoding_format'],
    [{ model, input: new Array(513).fill(5) }, 400, 'input'],  // code CONTEXT_TOO_LONG
    [{ model: 'llama_tiny-q4f16_1', input: 'hello' }, 400, 'model'],
  ]) {
    const r = await post(url, body);
    assert.equal(r.status, status, JSON.stringify(body) + ' ' + r.text);
    assert.equal(r.json.error.param, param, r.text);
  }
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }),
                       (e) => e.status === 400 && e.error?.param === 'model');
});
