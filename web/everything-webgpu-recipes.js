// The seed's recipes: the three shapes of work as one call each (docs/web.md, "Recipes"). They add scheduling
// fields and defaults to the caller's own messages and never author a prompt: a string is one user message, a
// list of messages or a request ({messages} or {prompt}) goes as it is. Fields precedence, lowest first: the
// recipe's defaults, the caller's options, the fields of a request object itself.
//   ghostText(engine, input, opts)  interactive, session "ghost-text" (a new call supersedes the one in flight),
//                                   max_tokens 24, streamed: a TextStream
//   ask(engine, input, opts)        one request at normal priority; opts.background: background + preemptible;
//                                   an array of inputs: one batch, one task (results in the inputs' order)
//   new Conversation(engine, opts)  history under one session key; send() streams a reply and appends the turn
// ScheduledEngine exposes them as engine.ghostText / engine.ask / engine.conversation.

import {EngineError, toError} from './everything-webgpu-errors.js';

// Options that steer a recipe and are not request fields.
const RECIPE_KEYS = ['background', 'onDelta', 'onItem', 'system', 'messages'];

function isMessage(x) {
  return !!x && typeof x === 'object' && !Array.isArray(x) && typeof x.role === 'string';
}
function isMessageList(x) { return Array.isArray(x) && x.length > 0 && x.every(isMessage); }

// One input as a request body (a copy).
function requestOf(input, where) {
  if (typeof input === 'string') return {messages: [{role: 'user', content: input}]};
  if (isMessageList(input)) return {messages: input.slice()};
  if (input && typeof input === 'object' && !Array.isArray(input) &&
      (Array.isArray(input.messages) || typeof input.prompt === 'string')) return Object.assign({}, input);
  throw new EngineError('BAD_REQUEST', `${where}: an input is a string (one user message), a list of messages or a ` +
    'request with messages or prompt', {field: where});
}

// The caller's options without the recipe's own keys.
function fieldsOf(opts) {
  const out = Object.assign({}, opts || {});
  for (const k of RECIPE_KEYS) delete out[k];
  return out;
}

// The text of one chunk (a chat delta or a completion's text).
function chunkText(c) {
  const ch = c && c.choices && c.choices[0];
  if (!ch) return '';
  return (ch.delta ? ch.delta.content : ch.text) || '';
}

// An OpenAI response (with the engine's "ewgpu" extension) as a recipe's result.
function resultOf(resp) {
  const ch = (resp && resp.choices && resp.choices[0]) || {};
  const x = (resp && resp.ewgpu) || {};
  return {
    text: ch.message ? ch.message.content : (ch.text || ''),
    finish_reason: ch.finish_reason || null,
    outcome: x.outcome || null,  // completed | superseded | cancelled | preempted | failed
    preempted: x.outcome === 'preempted',
    usage: resp && resp.usage,
    index: resp && resp.index !== undefined ? resp.index : 0,
    startedAt: x.startedAt,
    finishedAt: x.finishedAt,
    job: x.job,
    response: resp,
  };
}

function create(engine, body) {
  return body.prompt !== undefined ? engine.completions.create(body) : engine.chat.completions.create(body);
}

// A streamed reply: `for await (const delta of s)` gives the text as it comes (leaving the loop early cancels the
// job), `await s.result` the whole result (also for a reply nobody iterates), `s.cancel()` ends it. A reply that
// another request superseded (or that was cancelled or preempted) ends early and its result says so: finish_reason
// "abort", outcome "superseded" | "cancelled" | "preempted", with the text it had.
export class TextStream {
  // open(): posts the request (synchronously, so calls reach the engine in call order) and resolves to its
  // ChunkStream; onResult(result) runs before result resolves.
  constructor(open, onResult) {
    this.job = 0;
    this._stream = open();
    this._stream.then((s) => { this.job = s.job; }, () => {});
    this.result = this._stream.then((s) => s.finished).then((resp) => {
      const r = resultOf(resp);
      if (onResult) onResult(r);
      return r;
    });
    this.result.catch(() => {});  // a caller that only iterates sees the error there
  }
  async* [Symbol.asyncIterator]() {
    const s = await this._stream;
    for await (const c of s) {
      const t = chunkText(c);
      if (t) yield t;
    }
  }
  async cancel() { return (await this._stream).cancel(); }
}

// Ghost text: latency is the whole product. Interactive priority (it may preempt work that opted in), one session
// key (default "ghost-text") so each call supersedes the previous one still in flight, max_tokens 24, streamed.
export function ghostText(engine, input, opts) {
  const body = Object.assign({priority: 'interactive', session: 'ghost-text', max_tokens: 24}, fieldsOf(opts),
    requestOf(input, 'input'), {stream: true});
  return new TextStream(() => create(engine, body));
}

// ask(input): one request at normal priority; resolves to {text, finish_reason, outcome, preempted, usage, index,
// startedAt, finishedAt, job, response}. opts.background: background priority and preemptible (the reformat
// shape: an interactive request may cut in; a preempted job resolves with its partial text and preempted: true,
// it is never requeued). opts.onDelta(text): called with each piece as it is generated.
// ask([input, ...]): one batch, one task (the translation shape: opts.task names it); resolves to the results in
// the inputs' order (a failed item is {index, error, outcome: 'failed'}); opts.onItem(result) as each one lands.
export async function ask(engine, input, opts = {}) {
  const sched = opts.background ? {priority: 'background', preemptible: true} : {priority: 'normal'};
  const fields = fieldsOf(opts);
  delete fields.stream;
  if (Array.isArray(input) && !isMessageList(input)) {
    const {task, model} = fields;
    delete fields.task;
    delete fields.model;
    const requests = input.map((x, i) => Object.assign({}, sched, fields, requestOf(x, `input[${i}]`)));
    const onItem = opts.onItem ? (resp) => opts.onItem(resultOf(resp)) : undefined;
    const b = await engine.batch({requests, task, model}, onItem);
    return b.results.map((r) => r.error ? {index: r.index, error: toError(r.error), text: '', finish_reason: null,
      outcome: 'failed', preempted: false, task: b.task} : Object.assign(resultOf(r), {task: b.task}));
  }
  const body = Object.assign({}, sched, fields, requestOf(input, 'input'));
  if (!opts.onDelta) return resultOf(await create(engine, body));
  const s = new TextStream(() => create(engine, Object.assign(body, {stream: true})));
  for await (const t of s) opts.onDelta(t);
  return s.result;
}

let conversations = 0;

// A chat whose history the object keeps, under one session key (default "conversation-<n>", unique per page).
// opts: system (a system message: the conversation's shared prefix, which the engine's prefix reuse keeps),
// messages (a history to start from), session, and request fields for every turn (priority defaults to
// "interactive": someone is waiting). send(text | message, opts?) streams a reply (a TextStream); a turn that
// completes (finish_reason stop or length) appends the user message and the reply to the history. A send while
// a reply is in flight supersedes it (the same session key): the superseded turn leaves nothing in the history,
// and neither does a cancelled or preempted one. reset() ends a reply in flight and clears the history (the
// system message stays).
export class Conversation {
  constructor(engine, opts = {}) {
    this._engine = engine;
    this.session = opts.session || `conversation-${++conversations}`;
    this._system = opts.system ? [{role: 'system', content: String(opts.system)}] : [];
    this._history = opts.messages && opts.messages.length ? requestOf(opts.messages, 'messages').messages : [];
    this._fields = fieldsOf(opts);
    delete this._fields.session;
    this._turn = 0;
    this._current = null;
  }
  // The messages the next send() would send before its own: the system message and the history (a copy).
  get messages() { return [...this._system, ...this._history].map((m) => Object.assign({}, m)); }
  send(input, opts) {
    const user = typeof input === 'string' ? {role: 'user', content: input} : input;
    if (!isMessage(user)) throw new EngineError('BAD_REQUEST', 'send: a string or one message', {field: 'input'});
    const turn = ++this._turn;
    const body = Object.assign({priority: 'interactive'}, this._fields, fieldsOf(opts), {
      messages: [...this._system, ...this._history, user], session: this.session, stream: true});
    const s = new TextStream(() => this._engine.chat.completions.create(body), (r) => {
      if (turn !== this._turn) return;  // a later send or a reset came first
      this._current = null;
      if (r.finish_reason === 'stop' || r.finish_reason === 'length')
        this._history.push(Object.assign({}, user), {role: 'assistant', content: r.text});
    });
    this._current = s;
    return s;
  }
  reset() {
    ++this._turn;
    this._history = [];
    const s = this._current;
    this._current = null;
    return s ? s.cancel().catch(() => ({cancelled: 0})) : Promise.resolve({cancelled: 0});
  }
}
