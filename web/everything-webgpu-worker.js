// everything-webgpu's dedicated Worker (a classic worker; docs/web.md). It owns the GPUDevice and the wasm engine
// (everything-webgpu-core.js/.wasm), answers the page module's requests ({id, op, args} -> {id, ok | error}) and
// forwards the engine's messages (chunks, results, progress) to the page. The engine is stepped from this event
// loop: after a request and whenever a GPU readback resolves; nothing here waits in a loop.
/* global importScripts, createEwgpuCore */
'use strict';
importScripts('everything-webgpu-core.js');

let core = null;
let device = null;
let adapter = null;
let stepQueued = false;
const LOCAL_BASE = 'https://local-model.invalid/';
const registered = new Map();  // modelId -> {modelId, model (base URL), dir, files, weight_bytes}

// Cache Storage under WebLLM's own scopes and keys, so a folder either library cached is found by the other:
// weights and their manifest in "webllm/model", configs and tokenizer files in "webllm/config", each keyed by its
// URL under the model's base (new URL(file, base)). Our own list of registered folders (which WebLLM does not
// have) is one JSON entry per model in "everything-webgpu/registry".
const SCOPE_MODEL = 'webllm/model';
const SCOPE_CONFIG = 'webllm/config';
const SCOPE_REGISTRY = 'everything-webgpu/registry';
const hasCaches = () => typeof caches !== 'undefined';
function scopeOf(name) {
  return /^(params_shard_.*|tensor-cache\.json|ndarray-cache\.json)$/.test(name) ? SCOPE_MODEL : SCOPE_CONFIG;
}
function keyOf(base, name) { return new URL(name, base).href; }
function registryKey(modelId) { return LOCAL_BASE + '.registry/' + encodeURIComponent(modelId); }

async function cachePut(rec, files) {
  if (!hasCaches()) return false;
  const open = {};
  for (const f of files) {
    const scope = scopeOf(f.name);
    open[scope] = open[scope] || await caches.open(scope);
    await open[scope].put(new Request(keyOf(rec.model, f.name)), new Response(f.data));
  }
  const reg = await caches.open(SCOPE_REGISTRY);
  await reg.put(new Request(registryKey(rec.modelId)), new Response(JSON.stringify(
    {modelId: rec.modelId, model: rec.model, files: rec.files, weight_bytes: rec.weight_bytes})));
  return true;
}

// "cached" (every file), "partial" or "absent".
async function cacheState(rec) {
  if (!hasCaches()) return 'absent';
  let have = 0;
  for (const n of rec.files) if (await (await caches.open(scopeOf(n))).match(keyOf(rec.model, n))) have++;
  return have === rec.files.length ? 'cached' : have ? 'partial' : 'absent';
}

async function restoreRegistry() {
  if (!hasCaches() || !(await caches.has(SCOPE_REGISTRY))) return;
  const reg = await caches.open(SCOPE_REGISTRY);
  for (const req of await reg.keys()) {
    const r = await (await reg.match(req)).json();
    if (!registered.has(r.modelId)) registered.set(r.modelId, Object.assign(r, {dir: null}));
  }
}

// The folder from Cache Storage into the module's file system (the first load after a page reload).
async function materialize(rec) {
  const FS = core.FS;
  try { FS.mkdir('/models'); } catch (e) { /* exists */ }
  const dir = '/models/' + safeName(rec.modelId);
  rmTree(dir);
  FS.mkdir(dir);
  for (const n of rec.files) {
    const hit = hasCaches() ? await (await caches.open(scopeOf(n))).match(keyOf(rec.model, n)) : null;
    if (!hit) {
      rmTree(dir);
      throw engineError('CACHE_INCOMPLETE', `${rec.modelId}: ${n} is not in Cache Storage`, {model: rec.modelId, file: n});
    }
    FS.writeFile(dir + '/' + n, new Uint8Array(await hit.arrayBuffer()));
  }
  rec.dir = dir;
}

async function deleteModel(modelId) {
  const rec = registered.get(modelId);
  if (!rec) return {deleted: false};
  try { call('ewgpu_web_unload', ['string'], [modelId]); } catch (e) { /* not loaded */ }
  if (hasCaches()) {
    for (const n of rec.files) await (await caches.open(scopeOf(n))).delete(keyOf(rec.model, n));
    await (await caches.open(SCOPE_REGISTRY)).delete(registryKey(modelId));
  }
  if (rec.dir) rmTree(rec.dir);
  registered.delete(modelId);
  return {deleted: true};
}

function engineError(code, message, detail) {
  return {code, message, detail: detail || {}};
}

// Calls an export that returns a JSON string ({"ok": v} or {"error": e}); returns v or throws e.
function call(name, types, args) {
  const p = core.ccall(name, 'number', types, args);
  const s = core.UTF8ToString(p);
  core._ewgpu_web_free(p);
  const r = JSON.parse(s);
  if (r.error) throw r.error;
  return r.ok;
}

function kick() {
  if (stepQueued || !core) return;
  stepQueued = true;
  setTimeout(step, 0);
}

function step() {
  stepQueued = false;
  const r = core._ewgpu_web_step();
  if (r === 2) kick();
  // r === 1: GPU work in flight; the readback's resolution calls kick() (Module.ewgpuOnFutureDone).
}

async function requestDevice(opts) {
  if (!self.navigator || !navigator.gpu) throw engineError('NO_WEBGPU', 'navigator.gpu is not available in this worker');
  adapter = await navigator.gpu.requestAdapter({powerPreference: opts.powerPreference || 'high-performance'});
  if (!adapter) throw engineError('NO_WEBGPU', 'navigator.gpu.requestAdapter() gave no adapter');
  const wanted = opts.features || ['subgroups', 'shader-f16'];
  const requiredFeatures = wanted.filter((f) => adapter.features.has(f));
  const requiredLimits = {};
  for (const k in adapter.limits) if (typeof adapter.limits[k] === 'number') requiredLimits[k] = adapter.limits[k];
  try {
    device = await adapter.requestDevice({requiredFeatures, requiredLimits});
  } catch (e) {  // a limit this browser does not accept by name: the ones the engine reads
    const keep = ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxStorageBuffersPerShaderStage',
      'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX',
      'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupSizeZ', 'maxComputeWorkgroupsPerDimension'];
    const lim = {};
    for (const k of keep) if (k in requiredLimits) lim[k] = requiredLimits[k];
    device = await adapter.requestDevice({requiredFeatures, requiredLimits: lim});
  }
  device.lost.then((info) => post({type: 'device-lost', reason: info.reason, message: info.message}));
  return device;
}

function post(msg) { self.postMessage(msg); }

function adapterSummary() {
  const info = adapter.info || {};
  const limits = {};
  for (const k in device.limits) if (typeof device.limits[k] === 'number') limits[k] = device.limits[k];
  return {vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description,
    features: [...device.features].sort(), limits};
}

async function init(opts) {
  if (core) return {adapter: adapterSummary(), engine: call('ewgpu_web_init', [], [])};
  await requestDevice(opts || {});
  core = await createEwgpuCore({
    ewgpuGpu: {adapter, device, info: adapter.info},
    ewgpuOnMessage: (s) => {
      const m = JSON.parse(s);
      post(m);
    },
    ewgpuOnFutureDone: kick,
    print: (t) => post({type: 'log', level: 'info', text: t}),
    printErr: (t) => post({type: 'log', level: 'warn', text: t}),
    locateFile: (p) => new URL(p, self.location.href).href,
  });
  const engine = call('ewgpu_web_init', [], []);
  await restoreRegistry();
  return {adapter: adapterSummary(), engine};
}

function safeName(s) { return String(s).replace(/[^A-Za-z0-9._-]/g, '_'); }

function rmTree(dir) {
  const FS = core.FS;
  let names = [];
  try { names = FS.readdir(dir); } catch (e) { return; }
  for (const n of names) {
    if (n === '.' || n === '..') continue;
    const p = dir + '/' + n;
    if (FS.isDir(FS.stat(p).mode)) rmTree(p); else FS.unlink(p);
  }
  FS.rmdir(dir);
}

// files: [{name, data: ArrayBuffer}] (the page reads File objects before posting). The folder is written to the
// module's file system under a staging name, validated whole, and only then registered; an invalid folder is
// removed again (nothing of it stays) and rejected with INVALID_MODEL_FOLDER.
async function register(args) {
  const modelId = args.modelId;
  if (!modelId) throw engineError('BAD_REQUEST', 'registerModel: modelId is required', {field: 'modelId'});
  const files = (args.files || []).map((f) => ({name: String(f.name).split('/').pop(), data: f.data}))
    .filter((f) => !f.name.endsWith('-webgpu.wasm'));  // an MLC folder's model library: not needed here
  if (!files.length) throw engineError('INVALID_MODEL_FOLDER', 'registerModel: no files', {problem: 'empty'});
  const FS = core.FS;
  try { FS.mkdir('/models'); } catch (e) { /* exists */ }
  const staging = '/models/.staging-' + safeName(modelId);
  rmTree(staging);
  FS.mkdir(staging);
  for (const f of files) FS.writeFile(staging + '/' + f.name, new Uint8Array(f.data));
  let v;
  try {
    v = call('ewgpu_web_validate_folder', ['string'], [staging]);
  } catch (e) {
    rmTree(staging);
    throw e;
  }
  const dir = '/models/' + safeName(modelId);
  rmTree(dir);
  FS.rename(staging, dir);
  const rec = {modelId, model: args.model || LOCAL_BASE + encodeURIComponent(modelId) + '/', dir,
    files: FS.readdir(dir).filter((n) => n !== '.' && n !== '..'), weight_bytes: v.weight_bytes};
  registered.set(modelId, rec);
  const cached = args.persist === false ? false : await cachePut(rec, files);
  return {modelId, model: rec.model, files: rec.files, weight_bytes: v.weight_bytes, cache: cached ? 'cached' : 'absent'};
}

function listFiles(dir) {
  try { return core.FS.readdir(dir).filter((n) => n !== '.' && n !== '..'); } catch (e) { return null; }
}

const ops = {
  init: (a) => init(a),
  register: (a) => register(a),
  load: async (a) => {
    const rec = registered.get(a.modelId);
    if (!rec) throw engineError('UNKNOWN_MODEL', 'model ' + a.modelId + ' is not registered (registerModel first)',
      {model: a.modelId, field: 'model'});
    if (!rec.dir) {
      post({type: 'progress', model: a.modelId, stage: 'cache', fraction: 0.05});
      await materialize(rec);
    }
    const info = call('ewgpu_web_load', ['string', 'string', 'string'], [rec.dir, a.modelId, JSON.stringify(a.options || {})]);
    post({type: 'progress', model: a.modelId, stage: 'ready', fraction: 1});
    return info;
  },
  unload: (a) => {
    const r = call('ewgpu_web_unload', ['string'], [a.modelId]);
    return r;
  },
  create: (a) => {
    const r = call('ewgpu_web_chat', ['string', 'number', 'number'], [JSON.stringify(a.body), a.request, a.chat ? 1 : 0]);
    kick();
    return r;
  },
  cancel: (a) => {
    const r = call('ewgpu_web_cancel', ['number'], [a.job]);
    kick();
    return r;
  },
  state: () => call('ewgpu_web_state', [], []),
  registered: async () => {
    const out = [];
    for (const r of registered.values()) {
      out.push({modelId: r.modelId, model: r.model, files: r.files, weight_bytes: r.weight_bytes,
        cache: await cacheState(r), inMemory: !!(r.dir && listFiles(r.dir))});
    }
    return out;
  },
  delete: (a) => deleteModel(a.modelId),
  probe: async (a) => {
    if (!self.navigator || !navigator.gpu) return {webgpu: false};
    const ad = adapter || await navigator.gpu.requestAdapter();
    if (!ad) return {webgpu: false};
    const limits = {};
    for (const k in ad.limits) if (typeof ad.limits[k] === 'number') limits[k] = ad.limits[k];
    const info = ad.info || {};
    return {webgpu: true, vendor: info.vendor, architecture: info.architecture, device: info.device,
      description: info.description, features: [...ad.features].sort(), limits};
  },
  memory: () => ({wasm_heap_bytes: core ? core.HEAPU8.length : 0}),
};

self.onmessage = async (ev) => {
  const {id, op, args} = ev.data || {};
  try {
    if (!ops[op]) throw engineError('BAD_REQUEST', 'unknown operation ' + op);
    if (op !== 'init' && op !== 'probe' && !core) throw engineError('NO_WEBGPU', 'the engine is not initialised');
    const result = await ops[op](args || {});
    post({id, ok: result === undefined ? null : result});
  } catch (e) {
    const err = e && e.code ? e : engineError('INTERNAL', String(e && e.message || e), {stack: e && e.stack});
    post({id, error: err});
  }
};
