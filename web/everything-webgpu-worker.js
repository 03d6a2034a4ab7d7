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
  for (const f of files || []) {
    const scope = scopeOf(f.name);
    open[scope] = open[scope] || await caches.open(scope);
    await open[scope].put(new Request(keyOf(rec.model, f.name)), new Response(f.blob));
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

// A folder's files as Blobs: the ones registration kept (persist: false), else Cache Storage's (Chrome backs a
// cached response's Blob by its disk entry, so nothing is read yet). CACHE_INCOMPLETE names the first missing file.
async function blobsOf(rec) {
  if (rec.blobs) return rec.blobs;
  const out = [];
  for (const n of rec.files) {
    const hit = hasCaches() ? await (await caches.open(scopeOf(n))).match(keyOf(rec.model, n)) : null;
    if (!hit) throw engineError('CACHE_INCOMPLETE', `${rec.modelId}: ${n} is not in Cache Storage`, {model: rec.modelId, file: n});
    out.push({name: n, blob: await hit.blob()});
  }
  return out;
}

// Blobs as a folder of the module's file system through emscripten's WORKERFS: a read copies just the bytes asked
// for (FileReaderSync on a slice), so a shard is never copied whole into the wasm heap; the weight upload reads
// each matrix in bounded slices (model/gpu_model.cpp). Unmounted again as soon as the folder has been read.
function mountBlobs(dir, files) {
  const FS = core.FS;
  try { FS.mkdir('/models'); } catch (e) { /* exists */ }
  unmount(dir);
  FS.mkdir(dir);
  FS.mount(FS.filesystems.WORKERFS, {blobs: files.map((f) => ({name: f.name, data: f.blob}))}, dir);
}
function unmount(dir) {
  const FS = core.FS;
  try { FS.unmount(dir); } catch (e) { /* not mounted */ }
  try { FS.rmdir(dir); } catch (e) { /* absent */ }
}

async function deleteModel(modelId) {
  const rec = registered.get(modelId);
  if (!rec) return {deleted: false};
  try { call('ewgpu_web_unload', ['string'], [modelId]); } catch (e) { /* not loaded */ }
  if (hasCaches()) {
    for (const n of rec.files) await (await caches.open(scopeOf(n))).delete(keyOf(rec.model, n));
    await (await caches.open(SCOPE_REGISTRY)).delete(registryKey(modelId));
  }
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
  prebuiltList();
  await restoreRegistry();
  return {adapter: adapterSummary(), engine};
}

function safeName(s) { return String(s).replace(/[^A-Za-z0-9._-]/g, '_'); }


// files: [{name, data: Blob | ArrayBuffer}] (File objects are posted as they are: a Blob is not copied). The folder
// is mounted under a staging name, validated whole (ModelFolder::open and the tokenizer: a missing shard fails in
// milliseconds without reading any shard) and only then registered; an invalid folder leaves nothing behind and is
// rejected with INVALID_MODEL_FOLDER.
async function register(args) {
  const modelId = args.modelId;
  if (!modelId || typeof modelId !== 'string') throw engineError('BAD_REQUEST', 'registerModel: modelId is required', {field: 'modelId'});
  const files = (args.files || []).map((f) => ({name: String(f.name).split('/').pop(),
    blob: f.data instanceof Blob ? f.data : new Blob([f.data])}))
    .filter((f) => !f.name.endsWith('-webgpu.wasm'));  // an MLC folder's model library: not needed here
  if (!files.length) throw engineError('INVALID_MODEL_FOLDER', 'registerModel: no files', {problem: 'empty'});
  const base = args.model || LOCAL_BASE + encodeURIComponent(modelId) + '/';
  return validateAndRecord(modelId, base, files, args.persist !== false);
}

// files already in Cache Storage (fetched there): only the registry entry is written.
async function validateAndRecord(modelId, base, files, persist, inCache) {
  const staging = '/models/.staging-' + safeName(modelId);
  mountBlobs(staging, files);
  let v;
  try {
    v = call('ewgpu_web_validate_folder', ['string'], [staging]);
  } finally {
    unmount(staging);
  }
  const rec = {modelId, model: base, files: files.map((f) => f.name).sort(), weight_bytes: v.weight_bytes, blobs: null};
  const cached = persist ? await cachePut(rec, inCache ? null : files) : false;
  if (!cached) rec.blobs = files;  // kept in this worker for load()
  registered.set(modelId, rec);
  return {modelId, model: rec.model, files: rec.files, weight_bytes: v.weight_bytes, cache: cached ? 'cached' : 'absent'};
}

// The matrices' bytes, straight from the shard Blobs into the GPUBuffers the engine made (ewgpu_web_load with
// stream_weights lists the writes): each write is read in slices of at most 8 MiB (Blob.slice().arrayBuffer(), an
// ordinary JS ArrayBuffer, never the wasm heap) and written with queue.writeBuffer; after every 64 MiB the worker
// waits for the queue (onSubmittedWorkDone), so the browser's staging copies of the writes are given back as it
// goes and at most that much is in flight.
const SLICE = 8 << 20, IN_FLIGHT = 64 << 20;
async function streamWeights(modelId, info, blobs) {
  const byName = new Map(blobs.map((f) => [f.name, f.blob]));
  const total = info.writes.reduce((n, w) => n + w[4], 0);
  let done = 0, pending = 0, lastPost = 0;
  for (const [handle, dstOffset, shard, srcOffset, size] of info.writes) {
    const blob = byName.get(info.shards[shard]);
    const buffer = core.ewgpuObject(handle);
    if (!blob || !buffer) throw engineError('CACHE_INCOMPLETE', `${modelId}: ${info.shards[shard]} is missing`, {model: modelId, file: info.shards[shard]});
    for (let off = 0; off < size; off += SLICE) {
      const n = Math.min(SLICE, size - off);
      const bytes = await blob.slice(srcOffset + off, srcOffset + off + n).arrayBuffer();
      if (bytes.byteLength !== n) throw engineError('CACHE_INCOMPLETE', `${modelId}: ${info.shards[shard]} is short`, {model: modelId, file: info.shards[shard]});
      device.queue.writeBuffer(buffer, dstOffset + off, bytes);
      done += n;
      pending += n;
      if (pending >= IN_FLIGHT) {
        await device.queue.onSubmittedWorkDone();
        pending = 0;
      }
      if (done - lastPost >= (32 << 20) || done === total) {
        lastPost = done;
        post({type: 'progress', model: modelId, stage: 'weights', loaded: done, total, fraction: 0.3 + 0.3 * done / total});
      }
    }
  }
  await device.queue.onSubmittedWorkDone();
}

// ---- Remote sources: a base URL (WebLLM's appConfig.model_list `model`) fetched into Cache Storage.
// Keys and scopes are WebLLM's (keyOf/scopeOf), so a folder WebLLM cached is reused as it is and vice versa. A
// file already cached at its manifest size is not fetched again (resume per file); each fetched file is checked
// against the manifest's size (and md5 where the manifest has md5sum) before it is put, so Cache Storage never
// holds a short or corrupt shard. Progress: {type: 'progress', stage: 'fetch', fraction, loaded, total}.
const catalog = new Map();  // modelId -> base URL (appConfig.model_list and prebuilt ids)
const appConfigIds = new Set();
let prebuilt = null;
// WebLLM's prebuilt catalogue, embedded in the wasm as natively (store/catalog.h); its ids load like appConfig ids.
function prebuiltList() {
  if (!prebuilt) {
    prebuilt = call('ewgpu_web_catalog', [], []);
    for (const e of prebuilt) if (!catalog.has(e.model_id)) catalog.set(e.model_id, e.model_url);
  }
  return prebuilt;
}

function normBase(u) { return String(u).endsWith('/') ? String(u) : String(u) + '/'; }
function resolveBase(model) {
  // WebLLM's records name a Hugging Face repo; its files are under resolve/main/.
  const b = normBase(model);
  return /^https:\/\/huggingface\.co\/[^/]+\/[^/]+\/$/.test(b) ? b + 'resolve/main/' : b;
}

// A file from Cache Storage, or else from the network into Cache Storage (fetchToCache). A cached entry of the
// wrong size is fetched again. onBytes(n): n more bytes of this file are in hand.
async function cachedOrFetch(net, base, name, expect, onBytes) {
  const modelId = net.modelId;
  const cache = await caches.open(scopeOf(name));
  const key = keyOf(base, name);
  const hit = await cache.match(key);
  if (hit) {
    const blob = await hit.blob();
    if (expect.size === undefined || blob.size === expect.size) { onBytes(blob.size); return blob; }
    await cache.delete(key);  // a short or stale entry: fetched again
  }
  await fetchToCache(net, cache, key, expect, onBytes);
  const put = await cache.match(key);
  if (!put) throw engineError('CACHE_INCOMPLETE', `${key}: not in Cache Storage after it was put`, {url: key, model: modelId});
  return put.blob();  // backed by the cache entry, not by a copy in memory
}

// One GET of key from byte `from` on (a Range request when from > 0). Resolves to {resp, skip}: skip bytes of the
// body are ones already received (a server that ignores Range answers 200 with the whole file; it is read again
// from its start and the first `from` bytes dropped). HTTP errors are NETWORK_ERROR with reason http_status; a
// request that cannot connect is reason transfer, one whose headers do not come within stallMs is aborted (through
// `abort`, an AbortController) and is reason stalled.
async function openRange(modelId, key, from, abort, stallMs) {
  let resp, stalled = false;
  const timer = setTimeout(() => { stalled = true; abort.abort(); }, stallMs);
  try {
    const init = {cache: 'no-store', signal: abort.signal};
    if (from > 0) init.headers = {Range: `bytes=${from}-`};
    resp = await fetch(key, init);
  } catch (e) {
    if (stalled) {
      throw engineError('NETWORK_ERROR', `${key}: no response for ${stallMs / 1000} s`,
        {url: key, reason: 'stalled', model: modelId});
    }
    throw engineError('NETWORK_ERROR', `${key}: ${e && e.message || e}`, {url: key, reason: 'transfer', model: modelId});
  } finally {
    clearTimeout(timer);
  }
  if (from > 0 && resp.status === 206) {
    // Content-Range is readable same-origin or when exposed; a 206 to a single `bytes=N-` range starts at N.
    const m = /^bytes (\d+)-/.exec(resp.headers.get('Content-Range') || '');
    if (!m || Number(m[1]) === from) return {resp, skip: 0};
    await resp.body.cancel();
    return openRange(modelId, key, 0, abort, stallMs).then((r) => Object.assign(r, {skip: from}));
  }
  if (!resp.ok) {
    throw engineError('NETWORK_ERROR', `${key}: HTTP ${resp.status}`,
      {url: key, http_status: resp.status, reason: 'http_status', retryable: RETRY_STATUS(resp.status), model: modelId});
  }
  return {resp, skip: from};
}

// A file's bytes from the network in order, resuming where a transfer breaks (an error mid-body, a body that
// ends short of the expected size, or no byte for stallMs: that request is aborted) with `Range: bytes=N-` from
// the bytes handed out so far, at most RESUMES times. next() resolves to the next bytes, or null once the body
// ended complete; it throws NETWORK_ERROR otherwise (reason transfer, stalled or short_body).
const RESUMES = 4;
const RETRY_STATUS = (s) => s === 408 || s === 425 || s === 429 || s >= 500;  // as the native store
// Whether a failed request is tried again: it could not connect, its response did not come, or a retryable status.
const retryable = (e) => !!(e.detail && (e.detail.reason === 'transfer' || e.detail.reason === 'stalled' || e.detail.retryable));
class ResumingBody {
  // net: {modelId, stallMs}. Resolves once a request has its headers. The first request is tried again as a resume
  // is (a connection error, no response for stallMs, 408 / 425 / 429 / 5xx), after a pause, from the same budget of
  // RESUMES; any other HTTP error (a 404 manifest) throws at once.
  static async open(net, key, size) {
    const body = new ResumingBody(net, key, size);
    for (;;) {
      try {
        body.take(await openRange(net.modelId, key, 0, body.abort, body.stallMs));
        return body;
      } catch (e) {
        if (!retryable(e) || ++body.resumes > RESUMES) throw e;
        post({type: 'log', level: 'info', text: `${key}: ${e.message}; trying again (${body.resumes} of ${RESUMES})`});
        await new Promise((r) => setTimeout(r, 250 * body.resumes));
        body.abort = new AbortController();
      }
    }
  }
  constructor(net, key, size) {
    this.modelId = net.modelId;
    this.stallMs = net.stallMs;
    this.key = key;
    this.size = size;  // undefined: not known (no manifest size); then only an error mid-body resumes
    this.received = 0;
    this.resumes = 0;
    this.abort = new AbortController();
  }
  take(opened) {
    this.reader = opened.resp.body.getReader();
    this.skip = opened.skip;
  }
  // One read, or a rejection {stalled: true} (the request aborted) when no byte comes for stallMs.
  read() {
    let timer = 0;
    const stall = new Promise((_, reject) => {
      timer = setTimeout(() => { this.abort.abort(); reject({stalled: true}); }, this.stallMs);
    });
    return Promise.race([this.reader.read(), stall]).finally(() => clearTimeout(timer));
  }
  async next() {
    for (;;) {
      let r = null, broke = null;
      try {
        r = await this.read();
      } catch (e) {
        broke = e;
      }
      if (r && !r.done) {
        let bytes = r.value;
        if (this.skip > 0) {  // received before a 200 restart: dropped
          const drop = Math.min(this.skip, bytes.byteLength);
          this.skip -= drop;
          bytes = bytes.subarray(drop);
          if (!bytes.byteLength) continue;
        }
        this.received += bytes.byteLength;
        if (this.size !== undefined && this.received > this.size) throw this.short();
        return bytes;
      }
      if (r && this.skip === 0 && (this.size === undefined || this.received === this.size)) return null;
      await this.resume(broke);
    }
  }
  // Opens the rest of the body; a resume request that cannot connect, gets no response within stallMs or gets a
  // retryable status (408, 425, 429, 5xx) is tried again after a pause, within the same budget.
  async resume(broke) {
    for (;;) {
      if (++this.resumes > RESUMES) {
        if (!broke) throw this.short();
        if (broke.stalled) {
          throw engineError('NETWORK_ERROR', `${this.key}: no data for ${this.stallMs / 1000} s`,
            {url: this.key, reason: 'stalled', received: this.received, model: this.modelId});
        }
        if (broke.code) throw broke;
        throw engineError('NETWORK_ERROR', `${this.key}: ${broke && broke.message || broke}`,
          {url: this.key, reason: 'transfer', received: this.received, model: this.modelId});
      }
      this.abort = new AbortController();
      try {
        const o = await openRange(this.modelId, this.key, this.received, this.abort, this.stallMs);
        post({type: 'log', level: 'info', text: `${this.key}: resuming at byte ${this.received} (HTTP ${o.resp.status})`});
        this.take(o);
        return;
      } catch (e) {
        if (!retryable(e)) throw e;
        broke = e;
        await new Promise((r) => setTimeout(r, 250 * this.resumes));
      }
    }
  }
  short() {
    return engineError('NETWORK_ERROR', `${this.key}: ${this.received} bytes, the manifest says ${this.size}`,
      {url: this.key, reason: 'short_body', expected: this.size, actual: this.received, model: this.modelId});
  }
  cancel() { return this.reader.cancel(); }
}

// The body of key streamed into Cache Storage: cache.put reads a ReadableStream that pulls from the network
// (ResumingBody), counts and hashes (MD5, the core's) on the way, so no Blob of the whole file is ever held. After
// the last byte the md5 is checked; a mismatch (or a transfer that could not be completed) errors the stream, so
// cache.put rejects and Cache Storage never holds a short or corrupt file (NETWORK_ERROR with reason transfer,
// short_body or md5_mismatch, as the native store).
async function fetchToCache(net, cache, key, expect, onBytes) {
  const modelId = net.modelId;
  // An HTTP error (a 404 manifest) is thrown here, before anything is put.
  const body = await ResumingBody.open(net, key, expect.size);
  let md5 = expect.md5 ? new Md5() : null, failure = null;
  const stream = new ReadableStream({
    async pull(controller) {
      try {
        const bytes = await body.next();
        if (bytes) {
          if (md5) md5.update(bytes);
          onBytes(bytes.byteLength);
          controller.enqueue(bytes);
          return;
        }
        const actual = md5 ? md5.hex() : '';
        md5 = null;
        if (expect.md5 && actual !== expect.md5) {
          throw engineError('NETWORK_ERROR', `${key}: md5 mismatch`,
            {url: key, reason: 'md5_mismatch', md5_expected: expect.md5, md5_actual: actual, model: modelId});
        }
        controller.close();
      } catch (e) {
        failure = e;
        if (md5) { md5.discard(); md5 = null; }
        controller.error(e);
      }
    },
    cancel() {
      if (md5) { md5.discard(); md5 = null; }
      return body.cancel();
    },
  });
  try {
    await cache.put(new Request(key), new Response(stream));
  } catch (e) {
    await cache.delete(key);  // nothing of a failed put is kept
    throw failure || engineError('NETWORK_ERROR', `${key}: ${e && e.message || e}`, {url: key, reason: 'transfer', model: modelId});
  }
}

// The wasm module's streaming MD5 (base/md5.h), fed through one heap buffer of MD5_SLICE bytes.
const MD5_SLICE = 1 << 20;
class Md5 {
  constructor() {
    this.h = core._ewgpu_web_md5_new();
    this.p = core._malloc(MD5_SLICE);
  }
  update(bytes) {
    for (let off = 0; off < bytes.byteLength; off += MD5_SLICE) {
      const part = bytes.subarray(off, off + MD5_SLICE);
      core.HEAPU8.set(part, this.p);
      core._ewgpu_web_md5_update(this.h, this.p, part.byteLength);
    }
  }
  hex() {
    core._free(this.p);
    const s = core._ewgpu_web_md5_final(this.h);
    const hex = core.UTF8ToString(s);
    core._ewgpu_web_free(s);
    return hex;
  }
  discard() { this.hex(); }
}

async function jsonOf(blob, name, modelId) {
  try {
    return JSON.parse(await blob.text());
  } catch (e) {
    throw engineError('INVALID_MODEL_FOLDER', `${name}: not JSON`, {file: name, problem: 'bad_json', model: modelId});
  }
}

const PROGRESS_STEP = 1 << 20;
const STALL_TIMEOUT_S = 30;  // as the native store's stall_timeout_s
// options: {stall_timeout_s} (a read that brings no byte for this long aborts that request, which then resumes).
async function fetchModel(modelId, model, options) {
  if (typeof modelId !== 'string' || !modelId || typeof model !== 'string' || !/^https?:\/\//.test(model))
    throw engineError('UNKNOWN_MODEL', `model ${modelId}: no base URL (registerModel, appConfig.model_list or a URL)`,
      {model: modelId, field: 'model'});
  if (!hasCaches()) throw engineError('UNSUPPORTED', 'Cache Storage is not available here', {model: modelId});
  const stall = options && options.stall_timeout_s !== undefined ? options.stall_timeout_s : STALL_TIMEOUT_S;
  if (typeof stall !== 'number' || !(stall > 0) || !Number.isFinite(stall))
    throw engineError('BAD_REQUEST', 'stall_timeout_s: a number of seconds above 0', {field: 'stall_timeout_s', value: stall});
  const net = {modelId, stallMs: stall * 1000};
  const base = resolveBase(model);
  let loaded = 0, total = 0;
  // loaded / total: shard bytes (the configs and tokenizer are small and come first), counted as they arrive (a
  // resumed transfer counts each byte once); posted every PROGRESS_STEP bytes and at the end.
  let posted = -1;
  const progress = () => {
    if (posted >= 0 && loaded - posted < PROGRESS_STEP && !(loaded === total && posted !== loaded)) return;
    posted = loaded;
    post({type: 'progress', model: modelId, stage: 'fetch', loaded, total,
      fraction: total ? 0.05 + 0.9 * Math.min(1, loaded / total) : 0.05});
  };
  const small = () => progress();
  const shardBytes = (n) => { loaded += n; progress(); };
  const files = [];
  const cfgBlob = await cachedOrFetch(net, base, 'mlc-chat-config.json', {}, small);
  files.push({name: 'mlc-chat-config.json', blob: cfgBlob});
  const cfg = await jsonOf(cfgBlob, 'mlc-chat-config.json', modelId);
  let manifestName = 'tensor-cache.json', manBlob;
  try {
    manBlob = await cachedOrFetch(net, base, manifestName, {}, small);
  } catch (e) {
    if (!(e.detail && e.detail.http_status === 404)) throw e;
    manifestName = 'ndarray-cache.json';
    manBlob = await cachedOrFetch(net, base, manifestName, {}, small);
  }
  files.push({name: manifestName, blob: manBlob});
  const man = await jsonOf(manBlob, manifestName, modelId);
  const shards = Array.isArray(man.records) ? man.records : [];
  for (const r of shards) total += Number(r.nbytes) || 0;
  const tokFiles = Array.isArray(cfg.tokenizer_files) && cfg.tokenizer_files.length ? cfg.tokenizer_files : ['tokenizer.json'];
  for (const n of tokFiles) {
    if (typeof n !== 'string' || n.includes('/')) continue;
    files.push({name: n, blob: await cachedOrFetch(net, base, n, {}, small)});
  }
  for (const r of shards) {
    if (typeof r.dataPath !== 'string' || r.dataPath.includes('/'))
      throw engineError('INVALID_MODEL_FOLDER', `${manifestName}: a record without a plain dataPath`, {file: manifestName, problem: 'bad_record'});
    files.push({name: r.dataPath, blob: await cachedOrFetch(net, base, r.dataPath,
      {size: Number(r.nbytes), md5: typeof r.md5sum === 'string' ? r.md5sum : ''}, shardBytes)});
  }
  // Everything is in Cache Storage now: validated whole like a local folder, then registered (blobs not kept).
  return validateAndRecord(modelId, base, files, true, true);
}

const ops = {
  init: (a) => init(a),
  register: (a) => register(a),
  load: async (a) => {
    if (typeof a.modelId !== 'string' || !a.modelId) throw engineError('BAD_REQUEST', 'load: modelId is required', {field: 'modelId'});
    let rec = registered.get(a.modelId);
    if (!rec) {
      // A catalogue id (appConfig.model_list or the prebuilt list) or a base URL itself.
      const model = a.model || catalog.get(a.modelId) || (/^https?:\/\//.test(a.modelId) ? a.modelId : null);
      if (!model) throw engineError('UNKNOWN_MODEL', 'model ' + a.modelId + ' is not registered and not in the catalogue',
        {model: a.modelId, field: 'model'});
      await fetchModel(a.modelId, model, a.options);
      rec = registered.get(a.modelId);
    }
    post({type: 'progress', model: a.modelId, stage: 'cache', fraction: 0.05});
    const dir = '/models/' + safeName(a.modelId);
    const blobs = await blobsOf(rec);
    mountBlobs(dir, blobs);
    let info;
    try {
      const options = Object.assign({}, a.options || {}, {stream_weights: true});
      info = call('ewgpu_web_load', ['string', 'string', 'string'], [dir, a.modelId, JSON.stringify(options)]);
    } finally {
      unmount(dir);  // the configs and the tokenizer have been read; the weights come from the Blobs below
    }
    if (info.writes) {
      const t = performance.now();
      try {
        await streamWeights(a.modelId, info, blobs);
      } catch (e) {
        try { call('ewgpu_web_unload', ['string'], [a.modelId]); } catch (e2) { /* gone */ }
        throw e.code ? e : engineError('CACHE_INCOMPLETE', `${a.modelId}: reading the weights failed: ${e && e.message || e}`, {model: a.modelId});
      }
      call('ewgpu_web_weights_done', ['string'], [a.modelId]);
      info.stages = Object.assign(info.stages || {}, {weights: performance.now() - t});
      info.weights_streamed = info.writes.length;
      delete info.writes;
      delete info.shards;
    }
    post({type: 'progress', model: a.modelId, stage: 'ready', fraction: 1});
    return info;
  },
  unload: (a) => {
    const r = call('ewgpu_web_unload', ['string'], [a.modelId]);
    kick();  // embeddings requests queued for it end with UNKNOWN_MODEL at the next step
    return r;
  },
  create: (a) => {
    const r = call('ewgpu_web_chat', ['string', 'number', 'number'], [JSON.stringify(a.body), a.request, a.chat ? 1 : 0]);
    kick();
    return r;
  },
  // embeddings.create: checked and queued by the core; the result comes as a 'done' message once read back.
  embeddings: (a) => {
    const r = call('ewgpu_web_embeddings', ['string', 'number'], [JSON.stringify(a.body === undefined ? null : a.body), a.request]);
    kick();
    return r;
  },
  cancel: (a) => {
    const r = call('ewgpu_web_cancel', ['number'], [a.job]);
    kick();
    return r;
  },
  state: () => call('ewgpu_web_state', [], []),
  // appConfig.model_list entries ({model, model_id}; model_lib and the rest are ignored) and prebuilt ids.
  catalog: (a) => {
    for (const m of a.model_list || []) {
      if (!m || typeof m.model_id !== 'string' || typeof m.model !== 'string')
        throw engineError('BAD_REQUEST', 'appConfig.model_list: each entry needs model_id and model (a base URL)', {field: 'appConfig.model_list'});
      catalog.set(m.model_id, m.model);
      appConfigIds.add(m.model_id);
    }
    return {models: catalog.size};
  },
  fetch: (a) => fetchModel(a.modelId, a.model || catalog.get(a.modelId), a.options),
  batch: (a) => {
    const r = call('ewgpu_web_batch', ['string', 'number'], [JSON.stringify(a.body), a.request]);
    kick();
    return r;
  },
  configure: (a) => call('ewgpu_web_configure', ['string'], [JSON.stringify(a.config || {})]),
  // Registered folders, appConfig entries and WebLLM's prebuilt catalogue, each once (a registration wins).
  available: async () => {
    const out = [];
    const seen = new Set();
    for (const r of registered.values()) {
      seen.add(r.modelId);
      out.push({modelId: r.modelId, model: r.model, source: r.model.startsWith(LOCAL_BASE) ? 'local' : 'remote',
        cache: await cacheState(r)});
    }
    const prebuilt = new Set(prebuiltList().map((e) => e.model_id));
    for (const [id, model] of catalog) {
      if (seen.has(id)) continue;
      seen.add(id);
      const cfg = hasCaches() && await (await caches.open(SCOPE_CONFIG)).match(keyOf(resolveBase(model), 'mlc-chat-config.json'));
      out.push({modelId: id, model, source: prebuilt.has(id) && !appConfigIds.has(id) ? 'prebuilt' : 'remote',
        cache: cfg ? 'partial' : 'absent'});
    }
    return out;
  },
  canRun: async (a) => {
    const rec = registered.get(a.modelId);
    if (!rec) return call('ewgpu_web_can_run', ['string', 'string'], [a.modelId, '']);
    const dir = '/models/.fit-' + safeName(a.modelId);
    mountBlobs(dir, await blobsOf(rec));  // reads only the two JSON files
    try {
      return call('ewgpu_web_can_run', ['string', 'string'], [a.modelId, dir]);
    } finally {
      unmount(dir);
    }
  },
  recommend: (a) => call('ewgpu_web_recommend', ['string'], [JSON.stringify(a.options || {})]),
  registered: async () => {
    const out = [];
    for (const r of registered.values()) {
      out.push({modelId: r.modelId, model: r.model, files: r.files, weight_bytes: r.weight_bytes,
        cache: await cacheState(r), inMemory: !!r.blobs});
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
