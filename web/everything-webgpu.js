// everything-webgpu in a page: an ES module whose engine runs in a dedicated Worker (everything-webgpu-worker.js
// beside this file, with the wasm). WebLLM-compatible names: CreateScheduledEngine is a one-line swap for
// CreateMLCEngine; engine.chat.completions.create returns an async iterator of OpenAI chunks when streaming and
// the OpenAI response otherwise; engine.embeddings.create (an embedding model: bert) resolves to OpenAI's
// embeddings list. Errors are EngineError {code, detail} with the native engine's codes.
// docs/web.md and README.md show its use; everything-webgpu.d.ts declares it.

import {EngineError, toError} from './everything-webgpu-errors.js';
import {Conversation, TextStream, ask, ghostText} from './everything-webgpu-recipes.js';

export {Conversation, EngineError, TextStream};

// A stream of chunks: an async iterator fed by worker messages, ended by the result (or an error).
class ChunkStream {
  constructor(engine, request) {
    this._engine = engine;
    this._request = request;
    this._queue = [];
    this._waiters = [];
    this._done = false;
    this._error = null;
    this.job = 0;
    this.id = '';
    this.response = null;
    // The whole response once the job ended (rejects with its EngineError), whether or not anyone iterates.
    this.finished = new Promise((resolve, reject) => { this._finish = {resolve, reject}; });
    this.finished.catch(() => {});  // observed through the iterator instead: not an unhandled rejection
  }
  _push(chunk) {
    const w = this._waiters.shift();
    if (w) w.resolve({value: chunk, done: false}); else this._queue.push(chunk);
  }
  _end(error) {
    this._done = true;
    this._error = error || null;
    for (const w of this._waiters.splice(0)) {
      if (error) w.reject(error); else w.resolve({value: undefined, done: true});
    }
    if (error) this._finish.reject(error); else this._finish.resolve(this.response);
  }
  next() {
    if (this._queue.length) return Promise.resolve({value: this._queue.shift(), done: false});
    if (this._done) return this._error ? Promise.reject(this._error) : Promise.resolve({value: undefined, done: true});
    return new Promise((resolve, reject) => this._waiters.push({resolve, reject}));
  }
  // Leaving a for-await loop early cancels the job.
  async return() {
    if (!this._done) await this._engine.cancel(this.job);
    this._queue.length = 0;
    return {value: undefined, done: true};
  }
  [Symbol.asyncIterator]() { return this; }
  // Cancels the job: the stream ends after its last chunk (finish_reason "abort").
  cancel() { return this._engine.cancel(this.job); }
}

export class ScheduledEngine {
  constructor(options = {}) {
    this._options = options;
    this._next = 1;
    this._calls = new Map();     // id -> {resolve, reject}
    this._requests = new Map();  // request -> {stream?, resolve, reject}
    this._listeners = new Set();
    this._progress = options.initProgressCallback || null;
    this._models = new Map();    // modelId -> registration
    this._loaded = new Set();
    this._current = '';
    const url = options.workerUrl || new URL('./everything-webgpu-worker.js', import.meta.url);
    this._worker = new Worker(url);
    this._worker.onmessage = (ev) => this._onMessage(ev.data);
    this._worker.onerror = (ev) => {
      const e = new EngineError('INTERNAL', 'worker error: ' + (ev.message || 'unknown'));
      for (const c of this._calls.values()) c.reject(e);
      this._calls.clear();
    };
    const self = this;
    this.chat = {completions: {create: (req) => self._create(req, true)}};
    this.completions = {create: (req) => self._create(req, false)};
    this.embeddings = {create: (req) => self._embed(req)};
  }

  _call(op, args, transfer) {
    const id = this._next++;
    return new Promise((resolve, reject) => {
      this._calls.set(id, {resolve, reject});
      this._worker.postMessage({id, op, args}, transfer || []);
    });
  }

  _onMessage(m) {
    if (m.id !== undefined && this._calls.has(m.id)) {
      const c = this._calls.get(m.id);
      this._calls.delete(m.id);
      if (m.error) c.reject(toError(m.error)); else c.resolve(m.ok);
      return;
    }
    if (m.type === 'chunk' || m.type === 'done') {
      const r = this._requests.get(m.request);
      if (!r) return;
      if (m.type === 'chunk') { if (r.stream) r.stream._push(m.chunk); return; }
      this._requests.delete(m.request);
      const err = m.error ? toError(m.error) : null;
      if (r.stream) { r.stream.response = m.response; r.stream._end(err); }
      if (err) r.reject(err); else r.resolve(m.response);
      return;
    }
    if (m.type === 'progress' && this._progress) {
      const bytes = m.total ? ` ${(m.loaded / 1048576).toFixed(1)}/${(m.total / 1048576).toFixed(1)} MiB` : '';
      this._progress({progress: m.fraction, timeElapsed: 0, text: `${m.model}: ${m.stage}${bytes}`, stage: m.stage,
        model: m.model, loaded: m.loaded, total: m.total});
    }
    for (const fn of this._listeners) fn(m);
  }

  async init() {
    this.device = await this._call('init', {features: this._options.features});
    return this.device;
  }

  // A model from files: [File | {name, data: ArrayBuffer | Uint8Array}] (a drop, a directory picker, fetches).
  // The folder is validated whole inside the worker before it is registered (INVALID_MODEL_FOLDER otherwise) and
  // is given the base https://local-model.invalid/<modelId>/, which can never reach the network.
  // Registered folders are kept in Cache Storage (WebLLM's scopes and keys) unless persist is false, so a page
  // reload lists them (cache "cached") and load() reads them back from there.
  async registerModel({modelId, model, files, persist}) {
    if (!files || !files.length) throw new EngineError('INVALID_MODEL_FOLDER', 'registerModel: no files', {problem: 'empty'});
    const list = [];
    const transfer = [];
    for (const f of files) {
      if (!f || typeof (f.webkitRelativePath || f.name) !== 'string')
        throw new EngineError('INVALID_MODEL_FOLDER', 'registerModel: every file needs a name', {problem: 'bad_file'});
      let data;
      // A File / Blob is posted as it is (a reference, not a copy: the worker reads it in slices as the weights
      // upload); bytes are moved into the worker (transferred).
      if (typeof Blob !== 'undefined' && f instanceof Blob) data = f;
      else if (typeof Blob !== 'undefined' && f.data instanceof Blob) data = f.data;
      else if (f.data instanceof ArrayBuffer) { data = f.data.slice(0); transfer.push(data); }
      else if (ArrayBuffer.isView(f.data)) { data = new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength).slice().buffer; transfer.push(data); }
      else throw new EngineError('INVALID_MODEL_FOLDER', `registerModel: ${f.name} has no data`, {problem: 'bad_file', file: f.name});
      list.push({name: f.webkitRelativePath || f.name, data});
    }
    const rec = await this._call('register', {modelId, model, files: list, persist}, transfer);
    this._models.set(modelId, rec);
    return rec;
  }

  // WebLLM's AppConfig: model_list entries {model (a base URL), model_id, ...}; model_lib and the other fields are
  // not needed by this engine and ignored. load(model_id) then fetches the folder into Cache Storage (WebLLM's
  // scopes and keys, progress through initProgressCallback) unless it is cached already.
  async setAppConfig(appConfig) {
    const list = appConfig && Array.isArray(appConfig.model_list) ? appConfig.model_list : null;
    if (!list) throw new EngineError('BAD_REQUEST', 'appConfig.model_list must be a list', {field: 'appConfig.model_list'});
    this.appConfig = appConfig;
    return this._call('catalog', {model_list: list.map((m) => ({model: m && m.model, model_id: m && m.model_id}))});
  }

  // Fetches a model (an appConfig id, or a base URL given as model) into Cache Storage without loading it.
  // options: {stall_timeout_s} (default 30: a transfer that brings no byte for this long is resumed).
  fetchModel(modelId, model, options) { return this._call('fetch', {modelId, model, options}); }

  // modelId: a registered folder, an appConfig.model_list id, or a base URL (http(s)://.../).
  async load(modelId, options) {
    const info = await this._call('load', {modelId, options});
    this._loaded.add(modelId);
    this._current = modelId;
    return info;
  }
  // WebLLM's name for load.
  reload(modelId, options) { return this.load(modelId, options); }
  async unload(modelId) {
    const id = modelId || this._current;
    const r = await this._call('unload', {modelId: id});
    this._loaded.delete(id);
    if (this._current === id) this._current = [...this._loaded][0] || '';
    return r;
  }
  use(modelId) {
    if (!this._loaded.has(modelId)) throw new EngineError('UNKNOWN_MODEL', `model ${modelId} is not loaded`, {model: modelId});
    this._current = modelId;
  }

  async _create(req, chat) {
    const body = Object.assign({}, req);
    if (!body.model && this._current) body.model = this._current;
    const request = this._next++;
    if (body.stream) {
      const stream = new ChunkStream(this, request);
      const entry = {stream, resolve: () => {}, reject: () => {}};
      this._requests.set(request, entry);
      try {
        const r = await this._call('create', {body, request, chat});
        stream.job = r.job;
        stream.id = r.id;
      } catch (e) {
        this._requests.delete(request);
        throw e;
      }
      return stream;
    }
    const done = new Promise((resolve, reject) => this._requests.set(request, {resolve, reject}));
    try {
      await this._call('create', {body, request, chat});
    } catch (e) {
      this._requests.delete(request);
      throw e;
    }
    return done;
  }

  // embeddings.create({input, model?, encoding_format?, dimensions?, user?}) on a loaded embedding model (bert):
  // resolves to {object: 'list', data: [{object: 'embedding', index, embedding}], model, usage}. The worker's core
  // checks the request as natively (api/embeddings.h): BAD_REQUEST naming the field (input, input[i], model, ...),
  // CONTEXT_TOO_LONG, NO_MODEL / UNKNOWN_MODEL, and BAD_REQUEST (field model) for a chat model.
  async _embed(req) {
    const plain = req !== null && typeof req === 'object' && !Array.isArray(req);
    const body = plain ? Object.assign({}, req) : (req === undefined ? null : req);
    if (plain && !body.model && this._current) body.model = this._current;
    const request = this._next++;
    const done = new Promise((resolve, reject) => this._requests.set(request, {resolve, reject}));
    try {
      await this._call('embeddings', {body, request});
    } catch (e) {
      this._requests.delete(request);
      throw e;
    }
    return done;
  }

  // Many independent requests as one task (the seed's batch; an item with prompt is a completion, else a chat).
  // Every item is checked before any runs (a bad one rejects the batch: EngineError with detail.index). Resolves to
  // {task, results} in the items' order; onItem(response) is called as each one finishes.
  async batch(req, onItem) {
    const requests = Array.isArray(req) ? req : req && req.requests;
    if (!Array.isArray(requests) || !requests.length)
      throw new EngineError('BAD_REQUEST', 'requests: a batch needs a non-empty list', {field: 'requests'});
    const body = Object.assign({}, Array.isArray(req) ? {} : req, {requests});
    if (!body.model && this._current) body.model = this._current;
    const first = this._next;
    this._next += requests.length;
    const done = requests.map((_, i) => new Promise((resolve, reject) => this._requests.set(first + i, {
      resolve: (r) => { if (onItem) onItem(r); resolve(r); },
      reject: (e) => resolve({index: i, error: {code: e.code, message: e.message, detail: e.detail}}),
    })));
    let r;
    try {
      r = await this._call('batch', {body, request: first});
    } catch (e) {
      for (let i = 0; i < requests.length; i++) this._requests.delete(first + i);
      throw e;
    }
    return {task: r.task, results: await Promise.all(done)};
  }

  // The seed's recipes (everything-webgpu-recipes.js): the three shapes of work as one call each, scheduling
  // fields and defaults only, on the caller's own messages.
  // Ghost text: interactive, session "ghost-text" (each call supersedes the last), max_tokens 24; a TextStream.
  ghostText(input, opts) { return ghostText(this, input, opts); }
  // One request (normal priority; opts.background: background + preemptible), or an array: one batch, one task.
  ask(input, opts) { return ask(this, input, opts); }
  // A chat that keeps its history under one session key: send(text) streams the reply and appends the turn.
  conversation(opts) { return new Conversation(this, opts); }

  // Retunes the live engine, no reload: {decodeSteps?, rows?, taskShare?} (snake_case too).
  configure(config) { return this._call('configure', {config}); }

  // Registered folders, appConfig.model_list entries and WebLLM's prebuilt catalogue:
  // [{modelId, model, source: 'local' | 'remote' | 'prebuilt', cache}].
  listAvailableModels() { return this._call('available'); }
  // {ok, blockers, warnings} for this device, before anything is downloaded (catalogue facts and, for a registered
  // folder, its config and manifest). UNKNOWN_MODEL for an id neither knows.
  canRun(modelId) { return this._call('canRun', {modelId}); }
  // WebLLM's prebuilt models ranked for this device: {maxVramMB?, prefer?: 'quality' | 'speed', limit?}.
  recommendModels(options) { return this._call('recommend', {options}); }

  // Cancels a job (a stream, its job number). The job ends with finish_reason "abort" and its partial text.
  async cancel(job) {
    const id = typeof job === 'object' && job ? job.job : job;
    return this._call('cancel', {job: id});
  }
  // WebLLM's name: cancels every unfinished request of this engine.
  async interruptGenerate() {
    for (const r of this._requests.values()) if (r.stream && r.stream.job) await this.cancel(r.stream.job);
  }

  // Registered folders with their cache state ("cached", "partial", "absent").
  listModels() { return this._call('registered'); }
  // Unloads the model and removes its folder from Cache Storage and from the list.
  deleteModel(modelId) { return this._call('delete', {modelId}); }
  state() { return this._call('state'); }
  probe() { return this._call('probe'); }
  memory() { return this._call('memory'); }
  subscribe(fn) {
    this._listeners.add(fn);
    return () => this._listeners.delete(fn);
  }
  // Asks for persistent storage (a page's Cache Storage is evictable until granted).
  async ensurePersistent() {
    if (typeof navigator === 'undefined' || !navigator.storage || !navigator.storage.persist) return false;
    if (await navigator.storage.persisted()) return true;
    return navigator.storage.persist();
  }
  terminate() {
    this._worker.terminate();
  }
}

// WebLLM's CreateMLCEngine, one line swapped: the engine in a worker, the model loaded (when it is registered:
// options.models = [{modelId, model?, files}] registers folders first).
export async function CreateScheduledEngine(modelId, options = {}) {
  const engine = new ScheduledEngine(options);
  await engine.init();
  if (options.appConfig) await engine.setAppConfig(options.appConfig);
  for (const m of options.models || []) await engine.registerModel(m);
  if (modelId) await engine.load(modelId, options.loadOptions);
  return engine;
}
