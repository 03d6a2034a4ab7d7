// The browser build in a real browser: Debian's chromium (WebGPU on SwiftShader) driven by playwright-core.
// Serves build/web and the fixture folder from a local HTTP server, opens the demo page and checks, through the
// page module (everything-webgpu.js) and its worker:
//   1. registering the tiny fixture model from files, loading it;
//   2. a greedy completion whose text equals the native engine's (build/ewgpu run, same prompt, same count);
//   3. streaming: the chunks' text is that same text, in more than one piece, ending with finish_reason "length";
//   4. cancel mid-stream: the stream ends early with finish_reason "abort"; session supersession;
//   5. an invalid folder (a missing shard) rejected with INVALID_MODEL_FOLDER and not registered;
//   6. no pipeline bound more than 8 storage buffers (Firefox's cap);
//   7. Cache Storage holds the folder under WebLLM's scopes/keys; 8. after a reload it is listed as cached and runs;
//   9. structured output: a json_schema completion parses and validates against its schema;
//  11. `ewgpu serve --web build/web` serves the bundle: a second page from it starts the engine;
//  10. model sources: the fixture's base URL (this loopback server) as a WebLLM appConfig.model_list entry and as a
//      plain URL, fetched into Cache Storage with progress, under WebLLM's keys, the second load fetching nothing;
//  12. the recipes ghostText / ask / conversation (recipe_checks.mjs);
//  13. resumable, verified shards: a transfer cut after half a shard resumes with Range, a first request that fails
//      (503, a closed connection, no response) is asked again (resume_checks.mjs);
//  14. embeddings.create on a tiny bert folder: the native engine's vectors, typed errors (embedding_checks.mjs);
// and writes screenshots of the demo page (after load, after a streamed answer) to --out.
// Exit status 0 = pass, 1 = fail, 77 = skipped (chromium or the web bundle missing; CTest's SKIP_RETURN_CODE).
//   node tests/web/browser_test.mjs --web build/web --ewgpu build/ewgpu --fixture tests/fixtures/qwen3_tiny/q4f16_1
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {openBrowser, serve, serveFlaky} from './harness.mjs';
import {checkEmbeddings, nativeEmbeddings} from './embedding_checks.mjs';
import {checkRecipes} from './recipe_checks.mjs';
import {checkFirstRequests, checkResume} from './resume_checks.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const webDir = path.resolve(args.web || 'build/web');
const fixture = path.resolve(args.fixture || 'tests/fixtures/qwen3_tiny/q4f16_1');
const ewgpu = path.resolve(args.ewgpu || 'build/ewgpu');
const outDir = path.resolve(args.out || 'build/web-test');
const chromium = args.chromium || '/usr/bin/chromium';
const PROMPT = 'Once upon a time';
const TOKENS = 12;

function skip(why) { console.log(`SKIP: ${why}`); process.exit(77); }
if (!fs.existsSync(chromium)) skip(`no chromium at ${chromium}`);
if (!fs.existsSync(path.join(webDir, 'everything-webgpu-core.wasm'))) skip(`no web bundle in ${webDir} (scripts/build-web.sh)`);
if (!fs.existsSync(ewgpu)) skip(`no native ewgpu at ${ewgpu}`);
let pw;
try {
  pw = createRequire(import.meta.url)('playwright-core');
} catch (e) { skip('playwright-core is not installed (npm ci)'); }

let failures = 0;
function check(cond, what, extra) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}${extra !== undefined ? ' — ' + JSON.stringify(extra) : ''}`);
  if (!cond) failures++;
}

// The native engine's text for the same prompt: greedy, TOKENS tokens, the same folder.
const native = spawnSync(ewgpu, ['run', fixture, PROMPT, '-n', String(TOKENS), '--temperature', '0', '--json'],
  {encoding: 'utf8', env: {...process.env, EWGPU_ADAPTER: 'swiftshader'}});
if (native.status !== 0) {
  console.log(native.stdout, native.stderr);
  check(false, 'native ewgpu run');
  process.exit(1);
}
const nativeJson = JSON.parse(native.stdout.slice(native.stdout.indexOf('{')));
const nativeText = nativeJson.text;
check(typeof nativeText === 'string' && nativeText.length > 0, 'native text', nativeText);

const fixtureFiles = fs.readdirSync(fixture).filter((n) => n !== 'reference.json');
fs.mkdirSync(outDir, {recursive: true});

// A tiny random bert folder and the native engine's embeddings of two texts (check 14).
const bertDir = path.join(outDir, 'bert_tiny');
fs.rmSync(bertDir, {recursive: true, force: true});
const madeBert = spawnSync(ewgpu, ['make-tiny', bertDir, '--arch', 'bert', '--tokenizer',
  path.resolve(path.dirname(new URL(import.meta.url).pathname), '../fixtures/bert_tokenizer/tokenizer.json')], {encoding: 'utf8'});
check(madeBert.status === 0, 'ewgpu make-tiny --arch bert', madeBert.stderr);
const EMBED_TEXTS = ['Hello, World!', 'The quick brown fox.'];
const tNativeEmbed = Date.now();
const nativeEmbed = await nativeEmbeddings(ewgpu, bertDir, EMBED_TEXTS);
console.log(`native embeddings: ${Date.now() - tNativeEmbed} ms`);
const {server, base, hits} = await serve(webDir, fixture, {bert: bertDir});
// A kept profile (--profile) keeps Chromium's shader cache between runs; what the checks put in Cache Storage is
// deleted again at the end (check 8), and a registration overwrites a leftover of an interrupted run.
const {context: browser, close} = await openBrowser(pw, chromium, args.profile);
try {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') console.log(`[page ${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await page.goto(base + 'index.html');
  await page.waitForFunction(() => document.body.dataset.ready, null, {timeout: 60000});
  const ready = await page.evaluate(() => document.body.dataset.ready);
  check(ready === '1', 'the demo page started the engine (WebGPU adapter and device in the worker)',
    await page.evaluate(() => document.getElementById('gpu-status').textContent.slice(0, 200)));
  if (ready !== '1') throw new Error('no engine');

  // 1. register + load from files (the demo's helper fetches them and calls registerModel with File-like objects).
  const t0 = Date.now();
  await page.evaluate(({names}) => window.demo.loadFromUrls('qwen3-tiny', '/fixture/', names, {rows: 1}), {names: fixtureFiles});
  const loadMs = Date.now() - t0;
  const listed = await page.evaluate(() => window.demo.engine.listModels());
  const rec = listed.find((m) => m.modelId === 'qwen3-tiny');
  check(!!rec && rec.model === 'https://local-model.invalid/qwen3-tiny/', 'registered from files under the local-model.invalid base', rec);
  const status = await page.evaluate(() => document.getElementById('load-status').textContent);
  check(/loaded/.test(status), 'loaded in the browser', {status, load_ms_wall: loadMs});
  await page.screenshot({path: path.join(outDir, 'demo-loaded.png')});

  // 2. greedy completion equals native.
  const r = await page.evaluate(async ({prompt, n}) => {
    const t = performance.now();
    const resp = await window.demo.engine.completions.create({prompt, max_tokens: n, temperature: 0});
    return {resp, ms: performance.now() - t};
  }, {prompt: PROMPT, n: TOKENS});
  const webText = r.resp.choices[0].text;
  check(webText === nativeText, 'greedy text equals the native engine\'s', {browser: webText, native: nativeText});
  check(r.resp.usage.completion_tokens === TOKENS && r.resp.choices[0].finish_reason === 'length',
    'usage and finish_reason', {usage: r.resp.usage, finish: r.resp.choices[0].finish_reason});

  // 9. structured output through the shared prepare (api/prepare.h) and the grammar module compiled into wasm.
  const SCHEMA = {type: 'object', properties: {answer: {type: 'string', enum: ['yes', 'no']}, ok: {type: 'boolean'}},
    required: ['answer', 'ok'], additionalProperties: false};
  const so = await page.evaluate(async ({prompt, schema}) => {
    const t = performance.now();
    const resp = await window.demo.engine.completions.create({prompt, max_tokens: 64, temperature: 0,
      response_format: {type: 'json_schema', json_schema: {name: 'answer', schema}}});
    let bad = null;
    try {
      await window.demo.engine.completions.create({prompt, max_tokens: 4, response_format: {type: 'json_schema'}});
    } catch (e) { bad = {name: e.name, code: e.code, field: e.detail && e.detail.field}; }
    return {text: resp.choices[0].text, finish: resp.choices[0].finish_reason, ms: performance.now() - t, bad};
  }, {prompt: PROMPT, schema: SCHEMA});
  let doc = null;
  try { doc = JSON.parse(so.text); } catch (e) { /* checked below */ }
  const valid = doc && typeof doc === 'object' && !Array.isArray(doc) && Object.keys(doc).sort().join() === 'answer,ok' &&
    ['yes', 'no'].includes(doc.answer) && typeof doc.ok === 'boolean';
  check(!!valid && so.finish === 'stop', 'a json_schema completion parses and validates against its schema', so);
  check(so.bad && so.bad.name === 'EngineError' && so.bad.code === 'BAD_REQUEST', 'a json_schema without its schema is BAD_REQUEST', so.bad);

  // 3. streaming.
  const s = await page.evaluate(async ({prompt, n}) => {
    const stream = await window.demo.engine.completions.create({prompt, max_tokens: n, temperature: 0, stream: true});
    const pieces = [];
    let last = null;
    for await (const c of stream) { if (c.choices[0] && c.choices[0].text) pieces.push(c.choices[0].text); last = c; }
    return {pieces, finish: last && last.choices[0] ? last.choices[0].finish_reason : null};
  }, {prompt: PROMPT, n: TOKENS});
  check(s.pieces.join('') === nativeText && s.pieces.length > 1, 'streamed pieces join to the same text', s);
  check(s.finish === 'length', 'the stream ends with finish_reason length', s.finish);

  // 4. cancel mid-stream.
  const c = await page.evaluate(async ({prompt}) => {
    const stream = await window.demo.engine.completions.create({prompt, max_tokens: 200, temperature: 0, stream: true});
    let pieces = 0, finish = null, cancelled = null;
    for await (const ch of stream) {
      if (ch.choices[0] && ch.choices[0].text) pieces++;
      if (ch.choices[0] && ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
      if (pieces === 2 && cancelled === null) cancelled = await stream.cancel();
    }
    return {pieces, finish, cancelled, usage: stream.response && stream.response.usage};
  }, {prompt: PROMPT});
  check(c.finish === 'abort' && c.usage && c.usage.completion_tokens < 200 && c.cancelled.cancelled === 1,
    'cancel mid-stream ends the job early (finish_reason abort)', c);

  // 4b. session supersession: a new job of the same session ends the unfinished one as superseded.
  const sup = await page.evaluate(async ({prompt}) => {
    const e = window.demo.engine;
    const a = await e.completions.create({prompt, max_tokens: 200, temperature: 0, stream: true, session: 'tab-1'});
    await a.next();  // a is running
    const b = await e.completions.create({prompt, max_tokens: 4, temperature: 0, session: 'tab-1'});
    let finish = null;
    for await (const c of a) if (c.choices[0] && c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
    return {a: a.response && a.response.ewgpu && a.response.ewgpu.outcome, aTokens: a.response && a.response.usage.completion_tokens,
      finish, b: b.ewgpu && b.ewgpu.outcome, bTokens: b.usage.completion_tokens};
  }, {prompt: PROMPT});
  check(sup.a === 'superseded' && sup.aTokens < 200 && sup.b === 'completed' && sup.bTokens === 4,
    'a job of the same session supersedes the running one', sup);

  // 4c. the rest of the seed's calls: batch (one task; a bad item rejects it whole), configure, listAvailableModels,
  // canRun, recommendModels.
  const more = await page.evaluate(async ({prompt, greedyText}) => {
    const e = window.demo.engine;
    const seen = [];
    const b = await e.batch([{prompt, max_tokens: 12, temperature: 0}, {messages: [{role: 'user', content: 'Hi'}], max_tokens: 3}],
      (r) => seen.push(r.index));
    let badBatch = null;
    try { await e.batch([{prompt, max_tokens: 2}, {prompt, max_tokens: 0}]); } catch (err) { badBatch = {code: err.code, detail: err.detail}; }
    const cfg = await e.configure({decodeSteps: 8});
    let badCfg = null;
    try { await e.configure({decodeSteps: 0}); } catch (err) { badCfg = err.code; }
    await e.configure({decodeSteps: 16});
    const avail = await e.listAvailableModels();
    const fit = await e.canRun('qwen3-tiny');
    const fitPrebuilt = await e.canRun('Llama-3.2-1B-Instruct-q4f16_1-MLC');
    let fitUnknown = null;
    try { await e.canRun('no-such-model'); } catch (err) { fitUnknown = err.code; }
    const rec = await e.recommendModels({limit: 3});
    return {task: b.task, texts: b.results.map((r) => r.choices && (r.choices[0].text ?? r.choices[0].message.content)),
      first: b.results[0].choices[0].text === greedyText, indices: b.results.map((r) => r.index), seen: seen.sort(),
      badBatch, cfg, badCfg, avail: {n: avail.length, tiny: avail.find((m) => m.modelId === 'qwen3-tiny'),
        prebuilt: avail.filter((m) => m.source === 'prebuilt').length},
      fit, fitPrebuilt: {ok: fitPrebuilt.ok, blockers: fitPrebuilt.blockers.length}, fitUnknown,
      rec: rec.map((r) => r.model_id)};
  }, {prompt: PROMPT, greedyText: nativeText});
  check(more.first && more.indices.join() === '0,1' && more.seen.join() === '0,1' && /^batch:/.test(more.task),
    'batch: two items as one task, results in order, onItem per item', {task: more.task, texts: more.texts, seen: more.seen});
  check(more.badBatch && more.badBatch.code === 'BAD_REQUEST' && more.badBatch.detail.index === 1,
    'a batch with a bad item is rejected whole (detail.index)', more.badBatch);
  check(more.cfg.decode_steps === 8 && more.badCfg === 'BAD_REQUEST', 'configure retunes decode steps; 0 is BAD_REQUEST', {cfg: more.cfg, bad: more.badCfg});
  check(more.avail.tiny && more.avail.tiny.source === 'local' && more.avail.prebuilt > 100,
    'listAvailableModels: the registered folder and WebLLM\'s prebuilt catalogue', more.avail);
  check(more.fit && more.fit.ok === true && typeof more.fitPrebuilt.ok === 'boolean' && more.fitUnknown === 'UNKNOWN_MODEL' &&
    more.rec.length > 0 && more.rec.length <= 3, 'canRun (registered, prebuilt, unknown) and recommendModels', more);

  // 12. the seed's recipes: ghostText, ask (one input, an array as one batch, background + preemptible),
  // conversation.
  const tRecipes = Date.now();
  await checkRecipes(page, check, {prompt: PROMPT, nativeText, tokens: TOKENS});
  console.log(`recipes: ${Date.now() - tRecipes} ms`);

  // 14. embeddings.create on a bert folder loaded beside the chat model.
  const tEmbed = Date.now();
  await checkEmbeddings(page, check, {files: fs.readdirSync(bertDir), texts: EMBED_TEXTS, native: nativeEmbed,
    chatModel: 'qwen3-tiny', prompt: PROMPT, nativeText, tokens: TOKENS});
  console.log(`embeddings: ${Date.now() - tEmbed} ms`);

  // 5. an invalid folder: the shard missing.
  const bad = await page.evaluate(async ({names}) => {
    const files = [];
    for (const n of names) {
      if (n.startsWith('params_shard')) continue;
      files.push({name: n, data: await (await fetch('/fixture/' + n)).arrayBuffer()});
    }
    const t = performance.now();
    try {
      await window.demo.engine.registerModel({modelId: 'broken', files});
      return {ok: true};
    } catch (e) {
      const list = await window.demo.engine.listModels();
      return {code: e.code, name: e.name, detail: e.detail, ms: performance.now() - t, listed: list.map((m) => m.modelId)};
    }
  }, {names: fixtureFiles});
  check(bad.code === 'INVALID_MODEL_FOLDER' && bad.name === 'EngineError' && !bad.listed.includes('broken'),
    'a folder without its shard is rejected with INVALID_MODEL_FOLDER and not registered', bad);

  // 6. storage buffers per pipeline.
  const st = await page.evaluate(() => window.demo.engine.state());
  check(st.max_storage_bindings > 0 && st.max_storage_bindings <= 8, 'no pipeline binds more than 8 storage buffers',
    {most: st.max_storage_bindings, kernels: Object.keys(st.storage_bindings_per_kernel || {}).length});

  // 7. Cache Storage: the folder under WebLLM's scopes and keys, nothing of the rejected one; a reload finds it.
  const keys = await page.evaluate(async () => {
    const out = {};
    for (const scope of ['webllm/model', 'webllm/config']) out[scope] = (await (await caches.open(scope)).keys()).map((r) => r.url);
    return out;
  });
  const lbase = 'https://local-model.invalid/qwen3-tiny/';
  check(keys['webllm/model'].includes(lbase + 'params_shard_0.bin') && keys['webllm/model'].includes(lbase + 'tensor-cache.json') &&
    keys['webllm/config'].includes(lbase + 'mlc-chat-config.json') && keys['webllm/config'].includes(lbase + 'tokenizer.json') &&
    ![...keys['webllm/model'], ...keys['webllm/config']].some((u) => u.includes('/broken/')),
  'Cache Storage holds the folder under WebLLM\'s scopes and keys, and nothing of the rejected one', keys);

  // 10. model sources: the fixture's base URL on this loopback server, as WebLLM's appConfig.model_list entry
  // (model_lib ignored) and as a URL; fetched into Cache Storage under WebLLM's keys with progress.
  const remoteBase = base + 'fixture/';
  const shardPath = '/fixture/params_shard_0.bin';
  const hitsBefore = hits.get(shardPath) || 0;  // check 1's demo helper fetched the files once already
  const src = await page.evaluate(async ({remoteBase, prompt, n}) => {
    const e = window.demo.engine;
    const progress = [];
    const off = e.subscribe((m) => { if (m.type === 'progress' && m.stage === 'fetch') progress.push(m.fraction); });
    await e.setAppConfig({model_list: [{model: remoteBase, model_id: 'tiny-remote', model_lib: 'https://example.invalid/lib.wasm'}]});
    const t = performance.now();
    await e.load('tiny-remote', {rows: 1});
    const loadMs = performance.now() - t;
    const a = await e.completions.create({model: 'tiny-remote', prompt, max_tokens: n, temperature: 0});
    const model = (await (await caches.open('webllm/model')).keys()).map((r) => r.url);
    const config = (await (await caches.open('webllm/config')).keys()).map((r) => r.url);
    await e.unload('tiny-remote');
    let unknown = null;
    try { await e.load('no-such-model'); } catch (err) { unknown = err.code; }
    off();
    return {loadMs, text: a.choices[0].text, model, config, progress, unknown,
      listed: (await e.listModels()).find((m) => m.modelId === 'tiny-remote')};
  }, {remoteBase, prompt: PROMPT, n: TOKENS});
  const shardHits = (hits.get(shardPath) || 0) - hitsBefore;
  check(src.text === nativeText && src.listed && src.listed.cache === 'cached' && src.listed.model === remoteBase,
    'an appConfig.model_list id (base URL on loopback) loads through Cache Storage and gives the native text',
    {text: src.text, listed: src.listed, load_ms: src.loadMs});
  check(src.model.includes(remoteBase + 'params_shard_0.bin') && src.model.includes(remoteBase + 'tensor-cache.json') &&
    src.config.includes(remoteBase + 'mlc-chat-config.json') && src.config.includes(remoteBase + 'tokenizer.json'),
  'the fetched files are in Cache Storage under WebLLM\'s scopes and keys', {model: src.model, config: src.config});
  check(src.progress.length > 1 && src.progress[src.progress.length - 1] > 0.9 && src.unknown === 'UNKNOWN_MODEL',
    'fetch progress reported; an unknown id is UNKNOWN_MODEL', {progress: src.progress, unknown: src.unknown});
  const byUrl = await page.evaluate(async ({remoteBase, prompt, n}) => {
    const e = window.demo.engine;
    await e.load(remoteBase, {rows: 1});
    const a = await e.completions.create({model: remoteBase, prompt, max_tokens: n, temperature: 0});
    await e.unload(remoteBase);
    await e.deleteModel(remoteBase);
    await e.deleteModel('tiny-remote');
    const left = (await (await caches.open('webllm/model')).keys()).map((r) => r.url).filter((u) => u.startsWith(remoteBase));
    return {text: a.choices[0].text, left};
  }, {remoteBase, prompt: PROMPT, n: TOKENS});
  const shardHitsAll = (hits.get(shardPath) || 0) - hitsBefore;
  check(byUrl.text === nativeText && shardHits === 1 && shardHitsAll === 1,
    'a base URL loads too, the cached shard reused (fetched once in all)', {text: byUrl.text, shard_fetches: shardHitsAll});
  check(byUrl.left.length === 0, 'deleteModel removes the fetched files from Cache Storage', byUrl.left);

  // 13. resumable, verified shards: the fixture from a second loopback origin that cuts the shard's first transfer.
  const flaky = await serveFlaky(fixture);
  try {
    const tResume = Date.now();
    await checkResume(page, check, {flaky, prompt: PROMPT, nativeText, tokens: TOKENS,
      shardBytes: fs.statSync(path.join(fixture, 'params_shard_0.bin')).size});
    console.log(`resume: ${Date.now() - tResume} ms`);
    const tFirst = Date.now();
    await checkFirstRequests(page, check, {flaky, prompt: PROMPT, nativeText, tokens: TOKENS});
    console.log(`first requests: ${Date.now() - tFirst} ms`);
  } finally {
    flaky.close();
  }
  await page.evaluate(() => window.demo.engine.use('qwen3-tiny'));

  // The demo page after a streamed answer (its own Send button).
  await page.fill('#max', String(TOKENS));
  await page.click('#send');
  await page.waitForFunction(() => document.getElementById('speed').textContent.length > 0, null, {timeout: 120000});
  const shown = await page.evaluate(() => document.getElementById('out').textContent);
  check(shown === nativeText, 'the demo page shows the same streamed text', shown);
  await page.screenshot({path: path.join(outDir, 'demo-chat.png')});

  // 8. a page reload finds the model cached and runs it from Cache Storage (same greedy text).
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready, null, {timeout: 60000});
  const again = await page.evaluate(async ({prompt, n}) => {
    const e = window.demo.engine;
    const list = await e.listModels();
    const rec = list.find((m) => m.modelId === 'qwen3-tiny');
    const t = performance.now();
    await e.load('qwen3-tiny', {rows: 1});
    const loadMs = performance.now() - t;
    const resp = await e.completions.create({prompt, max_tokens: n, temperature: 0});
    return {cache: rec && rec.cache, inMemory: rec && rec.inMemory, loadMs, text: resp.choices[0].text};
  }, {prompt: PROMPT, n: TOKENS});
  check(again.cache === 'cached' && again.inMemory === false && again.text === nativeText,
    'after a reload the model is listed as cached and runs from Cache Storage', again);
  const gone = await page.evaluate(async () => {
    const e = window.demo.engine;
    const d = await e.deleteModel('qwen3-tiny');
    const model = (await (await caches.open('webllm/model')).keys()).map((r) => r.url);
    return {d, listed: (await e.listModels()).map((m) => m.modelId), model};
  });
  check(gone.d.deleted && !gone.listed.includes('qwen3-tiny') && !gone.model.some((u) => u.includes('/qwen3-tiny/')),
    'deleteModel removes it from the list and from Cache Storage', gone);
  // 11. the bundle served by `ewgpu serve --web` (cpp-httplib's static mount: the wasm's MIME type, the worker).
  const srv = spawn(ewgpu, ['serve', '--web', webDir, '--port', '0', '--host', '127.0.0.1'], {stdio: ['ignore', 'pipe', 'pipe']});
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      const t = setTimeout(() => reject(new Error('ewgpu serve did not start: ' + out)), 30000);
      const on = (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/[^\s]+)/);
        if (m) { clearTimeout(t); resolve(m[1].replace(/\/$/, '')); }
      };
      srv.stdout.on('data', on);
      srv.stderr.on('data', on);
      srv.on('exit', (code) => reject(new Error(`ewgpu serve exited ${code}: ${out}`)));
    });
    const wasm = await fetch(url + '/everything-webgpu-core.wasm');
    const p2 = await browser.newPage();
    await p2.goto(url + '/index.html');
    await p2.waitForFunction(() => document.body.dataset.ready, null, {timeout: 60000});
    const ready2 = await p2.evaluate(() => document.body.dataset.ready);
    await p2.close();
    check(ready2 === '1' && wasm.ok && /application\/wasm/.test(wasm.headers.get('content-type') || ''),
      '`ewgpu serve --web build/web` serves the bundle and the demo page starts the engine from it',
      {url, wasm_type: wasm.headers.get('content-type')});
  } finally {
    srv.kill();
  }
  console.log(`screenshots in ${outDir}`);
} catch (e) {
  console.log(`FAIL exception: ${e && e.stack || e}`);
  failures++;
} finally {
  await close();
  server.close();
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
