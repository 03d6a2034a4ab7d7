// engine.embeddings.create in the browser (browser_test.mjs calls this with the chat fixture loaded): a tiny random
// bert folder (`ewgpu make-tiny --arch bert`, served at /bert/) registered from files and loaded next to it; a
// string and a list of strings embedded in OpenAI's shape; every vector of the model's width, of unit norm and
// within 1e-5 of the native engine's (`ewgpu serve` on the same folder, POST /v1/embeddings: the GPU encoder that
// embeddings_gpu_test and server_embeddings check against the CPU reference); base64 = float; two embeddings
// requests and a chat completion in flight together each equal to its result alone; and the typed errors of bad
// input (EngineError with the native code and detail.field).
//   const native = await nativeEmbeddings(ewgpu, bertDir, texts);   // before the browser starts
//   await checkEmbeddings(page, check, {files, texts, native, chatModel, prompt, nativeText, tokens})
import {startServer} from '../server/harness.mjs';

// The native engine's float vectors for `texts` (one request), through `ewgpu serve` on loopback.
export async function nativeEmbeddings(ewgpu, bertDir, texts) {
  const srv = await startServer({bin: ewgpu, args: ['serve', '--model', bertDir, '--adapter', 'swiftshader',
    '--rows', '1', '--quiet', '--host', '127.0.0.1'], timeoutMs: 300000});
  try {
    const r = await fetch(`${srv.url}/v1/embeddings`, {method: 'POST', headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({input: texts, encoding_format: 'float'})});
    const j = await r.json();
    if (!r.ok) throw new Error(`native /v1/embeddings: ${r.status} ${JSON.stringify(j)}`);
    return j;
  } finally {
    await srv.stop();
  }
}

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => a.length !== b.length ? Infinity : Math.max(...a.map((x, i) => Math.abs(x - b[i])));

export async function checkEmbeddings(page, check, {files, texts, native, chatModel, prompt, nativeText, tokens}) {
  const r = await page.evaluate(async ({files, texts, chatModel, prompt, tokens}) => {
    const e = window.demo.engine;
    const list = [];
    for (const n of files) list.push({name: n, data: await (await fetch('/bert/' + n)).arrayBuffer()});
    await e.registerModel({modelId: 'bert-tiny', files: list, persist: false});
    const t = performance.now();
    const info = await e.load('bert-tiny');
    const loadMs = performance.now() - t;
    const t1 = performance.now();
    const one = await e.embeddings.create({input: texts[0]});  // the current model: just loaded
    const firstMs = performance.now() - t1;
    const many = await e.embeddings.create({model: 'bert-tiny', input: texts});
    const b64 = await e.embeddings.create({model: 'bert-tiny', input: texts, encoding_format: 'base64'});
    const decoded = b64.data.map((d) => {
      const bin = atob(d.embedding);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return Array.from(new Float32Array(bytes.buffer));
    });
    // Two embeddings requests and a chat completion in flight at once: the step advances both paths.
    const [c1, c2, chat] = await Promise.all([
      e.embeddings.create({model: 'bert-tiny', input: texts[1]}),
      e.embeddings.create({model: 'bert-tiny', input: [texts[0]]}),
      e.completions.create({model: chatModel, prompt, max_tokens: tokens, temperature: 0})]);
    const err = async (fn) => {
      try { await fn(); return {resolved: true}; } catch (x) { return {name: x.name, code: x.code, message: x.message, field: x.detail && x.detail.field}; }
    };
    const errors = {
      number: await err(() => e.embeddings.create({model: 'bert-tiny', input: 42})),
      mixed: await err(() => e.embeddings.create({model: 'bert-tiny', input: ['fine', 5]})),
      empty: await err(() => e.embeddings.create({model: 'bert-tiny', input: ''})),
      missing: await err(() => e.embeddings.create({model: 'bert-tiny'})),
      format: await err(() => e.embeddings.create({model: 'bert-tiny', input: 'x', encoding_format: 'int8'})),
      long: await err(() => e.embeddings.create({model: 'bert-tiny', input: 'hello '.repeat(600)})),
      notLoaded: await err(() => e.embeddings.create({model: 'no-such-model', input: 'x'})),
      chatModel: await err(() => e.embeddings.create({model: chatModel, input: 'x'})),
      chatOnBert: await err(() => e.completions.create({model: 'bert-tiny', prompt: 'x', max_tokens: 2})),
    };
    const st = await e.state();
    await e.unload('bert-tiny');
    const afterUnload = await err(() => e.embeddings.create({model: 'bert-tiny', input: 'x'}));
    await e.deleteModel('bert-tiny');
    e.use(chatModel);
    return {info, loadMs, firstMs, one, many, decoded, c1, c2, chat: chat.choices[0].text, errors, afterUnload,
      listed: st.models.find((m) => m.model === 'bert-tiny')};
  }, {files, texts, chatModel, prompt, tokens});

  const H = native.data[0].embedding.length;
  check(r.info.embedding === true && r.info.hidden_size === H && r.listed && r.listed.embedding === true,
    'a bert folder registers from files and loads as an embedding model', {info: r.info, load_ms: r.loadMs});
  const shape = (x, n) => x.object === 'list' && x.model === 'bert-tiny' && x.data.length === n &&
    x.data.every((d, i) => d.object === 'embedding' && d.index === i && d.embedding.length === H);
  check(shape(r.one, 1) && shape(r.many, texts.length), 'embeddings.create: OpenAI\'s list shape, one vector of the model\'s width per input',
    {one: r.one.data.length, many: r.many.data.length, width: H});
  const norms = [...r.one.data, ...r.many.data].map((d) => norm(d.embedding));
  check(norms.every((n) => Math.abs(n - 1) < 1e-5), 'every vector has unit norm', norms);
  const dOne = maxDiff(r.one.data[0].embedding, native.data[0].embedding);
  const dMany = Math.max(...r.many.data.map((d, i) => maxDiff(d.embedding, native.data[i].embedding)));
  check(dOne < 1e-5 && dMany < 1e-5, 'a string and a list of strings give the native engine\'s vectors (within 1e-5)',
    {string: dOne, list: dMany, first_call_ms: r.firstMs});
  check(r.many.usage.prompt_tokens === native.usage.prompt_tokens && r.many.usage.total_tokens === native.usage.prompt_tokens &&
    r.one.usage.prompt_tokens === 6, 'usage counts the [CLS] ... [SEP] tokens as natively', {web: r.many.usage, native: native.usage});
  check(r.decoded.every((v, i) => maxDiff(v, r.many.data[i].embedding.map(Math.fround)) === 0),
    'encoding_format base64 decodes to the float vectors');
  check(maxDiff(r.c1.data[0].embedding, r.many.data[1].embedding) === 0 &&
    maxDiff(r.c2.data[0].embedding, r.one.data[0].embedding) === 0 && r.chat === nativeText,
  'two embeddings requests and a completion in flight together: each equals its result alone', {chat: r.chat});
  const E = r.errors;
  const is = (x, code, field) => x.name === 'EngineError' && x.code === code && x.field === field;
  check(is(E.number, 'BAD_REQUEST', 'input') && is(E.mixed, 'BAD_REQUEST', 'input[1]') && is(E.empty, 'BAD_REQUEST', 'input') &&
    is(E.missing, 'BAD_REQUEST', 'input') && is(E.format, 'BAD_REQUEST', 'encoding_format'),
  'bad input is an EngineError BAD_REQUEST naming the field', E);
  check(is(E.long, 'CONTEXT_TOO_LONG', 'input') && is(E.notLoaded, 'UNKNOWN_MODEL', 'model') &&
    is(E.chatModel, 'BAD_REQUEST', 'model') && is(E.chatOnBert, 'BAD_REQUEST', 'model') && is(r.afterUnload, 'UNKNOWN_MODEL', 'model'),
  'a long input, a model not loaded, a chat model asked for embeddings and the bert model asked to complete: typed errors naming the field',
  {long: E.long, notLoaded: E.notLoaded, chatModel: E.chatModel, chatOnBert: E.chatOnBert, afterUnload: r.afterUnload});
}
