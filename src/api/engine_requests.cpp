// Requests of the public API: a CompletionRequest checked against its model (rendered, validated, defaults
// applied) becomes a scheduler job; batches; the OpenAI chat.completions / completions facade over them.
#include "api/engine_impl.h"
#include "api/openai.h"
#include "grammar/json_schema.h"

#include <random>

namespace ewgpu {
namespace {

Error bad(const std::string& field, const std::string& message, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json d = {{"field", field}};
  for (auto& [k, v] : extra.items()) d[k] = v;
  return makeError(ErrorCode::kBadRequest, field + ": " + message, d);
}

uint64_t randomSeed() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lk(mu);
  return gen();
}

std::string randomHex(size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  uint64_t r = randomSeed();
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0 && i) r = randomSeed();
    s += hex[r & 15];
    r >>= 4;
  }
  return s;
}

}  // namespace

Result<PreparedJob> Engine::Impl::prepare(const CompletionRequest& req) const {
  PreparedJob job;
  {
    std::lock_guard<std::mutex> lk(mu);
    const std::string model = req.model.empty() ? current_model : req.model;
    if (model.empty())
      return makeError(ErrorCode::kNoModel, "no model is loaded (load one first)", {{"field", "model"}});
    auto it = models.find(model);
    if (it == models.end()) {
      if (loading.count(model))
        return makeError(ErrorCode::kNoModel, "model " + model + " is still loading", {{"field", "model"}, {"model", model}});
      nlohmann::json ids = nlohmann::json::array();
      for (const auto& [id, r] : models) ids.push_back(id);
      return makeError(ErrorCode::kUnknownModel, "model " + model + " is not loaded",
                       {{"field", "model"}, {"model", model}, {"resident", ids}});
    }
    job.assets = it->second.assets;
  }
  const ModelAssets& a = *job.assets;
  // Render the prompt (outside the lock: tokenizing a long prompt takes milliseconds).
  std::vector<int32_t> ids;
  const char* prompt_field = "messages";
  if (req.prompt && !req.messages.empty()) return bad("prompt", "give either prompt or messages, not both");
  if (req.prompt) {
    prompt_field = "prompt";
    if (req.prompt->empty()) return bad("prompt", "must not be empty");
    ids = a.tokenizer.encode(*req.prompt);
  } else {
    if (req.messages.empty()) return bad("messages", "required (a non-empty list)");
    for (size_t i = 0; i < req.messages.size(); ++i) {
      const std::string& role = req.messages[i].role;
      if (role != "system" && role != "user" && role != "assistant" && role != "tool")
        return bad("messages[" + std::to_string(i) + "].role", "must be system, user, assistant or tool",
                   {{"value", role}});
    }
    if (a.conv) {
      auto r = a.conv->renderTokens(a.tokenizer, req.messages);
      if (!r) {
        Error e = std::move(r).error();
        e.detail["field"] = "messages";
        return e;
      }
      ids = std::move(*r);
    } else {  // no template: the contents, one per line
      std::string text;
      for (const auto& m : req.messages) text += m.content + "\n";
      ids = a.tokenizer.encode(text);
    }
  }
  if (ids.empty()) return bad(prompt_field, "renders to no tokens");
  if (ids.size() >= a.context)
    return makeError(ErrorCode::kContextTooLong,
                     "the prompt is " + std::to_string(ids.size()) + " tokens; the context window of " + a.id +
                         " is " + std::to_string(a.context),
                     {{"field", prompt_field}, {"prompt_tokens", ids.size()}, {"context_window", a.context}});
  // Sampling: the folder's defaults, then what the request sets.
  SamplingParams s = a.defaults;
  if (req.temperature) s.temperature = *req.temperature;
  if (req.top_p) s.top_p = *req.top_p;
  if (req.top_k) s.top_k = *req.top_k;
  if (req.presence_penalty) s.presence_penalty = *req.presence_penalty;
  if (req.frequency_penalty) s.frequency_penalty = *req.frequency_penalty;
  if (req.repetition_penalty) s.repetition_penalty = *req.repetition_penalty;
  s.seed = req.seed ? *req.seed : randomSeed();
  if (req.max_tokens && *req.max_tokens == 0) return bad("max_tokens", "must be at least 1");
  s.max_tokens = std::min<uint64_t>(req.max_tokens.value_or(opts.default_max_tokens), a.context - ids.size());
  s.logprobs = req.logprobs;
  if (req.top_logprobs && !req.logprobs) return bad("top_logprobs", "needs logprobs");
  s.n_logprobs = req.top_logprobs;
  s.logit_bias = req.logit_bias;
  EWGPU_TRY(s.validate(a.config.vocab));
  for (const auto& st : req.stop)
    if (st.empty()) return bad("stop", "stop strings must not be empty");
  if (req.session.size() > 256) return bad("session", "longer than 256 bytes");
  if (req.task.size() > 256) return bad("task", "longer than 256 bytes");

  std::shared_ptr<grammar::CompiledGrammar> grammar;
  if (req.response_format && req.response_format->type != "text") {
    const ResponseFormat& rf = *req.response_format;
    grammar = std::make_shared<grammar::CompiledGrammar>();
    grammar->kind = rf.type;
    grammar->vocab = a.vocab;
    if (rf.type == "json_object") {
      grammar->grammar = grammar::jsonObjectGrammar();
    } else if (rf.type == "json_schema") {
      EWGPU_ASSIGN(grammar->grammar, grammar::compileJsonSchema(rf.schema.is_null() ? nlohmann::json(true) : rf.schema,
                                                               "response_format.json_schema.schema"));
    } else {
      return bad("response_format.type", "must be text, json_object or json_schema", {{"value", rf.type}});
    }
  }

  JobSpec& j = job.spec;
  j.model = a.id;
  j.row.prompt = std::move(ids);
  j.row.sampling = std::move(s);
  j.row.stop_strings = a.stop_strings;
  j.row.stop_strings.insert(j.row.stop_strings.end(), req.stop.begin(), req.stop.end());
  j.row.grammar = std::move(grammar);
  j.priority = req.priority;
  j.session = req.session;
  j.task = req.task;
  j.preemptible = req.preemptible;
  return job;
}

Result<CompletionHandle> Engine::Impl::submit(PreparedJob job, std::function<void(const Chunk&)> on_chunk,
                                              std::function<void(const CompletionResult&)> on_done) {
  auto out = std::make_shared<CompletionJob>();
  out->result = std::make_shared<Pending<CompletionResult>>();
  JobCallbacks cb;
  cb.on_chunk = std::move(on_chunk);
  cb.on_done = [res = out->result, on_done = std::move(on_done)](const CompletionResult& r) {
    if (on_done) on_done(r);
    res->set(r);
  };
  Effects fx;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (stopping) return makeError(ErrorCode::kEngineClosed, "the engine was closed");
    auto it = models.find(job.spec.model);
    if (it == models.end() || it->second.assets != job.assets)  // unloaded (or reloaded) since prepare()
      return makeError(ErrorCode::kUnknownModel, "model " + job.spec.model + " is not loaded",
                       {{"field", "model"}, {"model", job.spec.model}});
    out->id = sched.submit(std::move(job.spec), std::move(cb), fx);
    wake = true;
  }
  cv.notify_all();
  post(std::move(fx));
  return CompletionHandle(out);
}

Result<CompletionHandle> Engine::complete(CompletionRequest req, std::function<void(const Chunk&)> on_chunk) {
  try {
    auto job = impl_->prepare(req);
    if (!job) return std::move(job).error();
    return impl_->submit(std::move(*job), std::move(on_chunk), {});
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("complete: ") + e.what());
  }
}

Result<BatchHandle> Engine::batch(std::vector<CompletionRequest> reqs, std::function<void(const CompletionResult&)> on_item) {
  try {
    if (reqs.empty()) return bad("requests", "a batch needs at least one request");
    if (reqs.size() > 100000) return bad("requests", "at most 100000 requests per batch");
    auto out = std::make_shared<BatchJob>();
    out->task = "batch:" + std::to_string(++impl_->batches);
    out->results = std::make_shared<Pending<std::vector<CompletionResult>>>();
    std::vector<PreparedJob> jobs;
    for (size_t i = 0; i < reqs.size(); ++i) {
      reqs[i].task = out->task;
      auto j = impl_->prepare(reqs[i]);
      if (!j) {
        Error e = std::move(j).error();
        e.detail["index"] = i;
        return e;
      }
      j->spec.index = i;
      jobs.push_back(std::move(*j));
    }
    struct Gather {
      std::mutex mu;
      std::vector<CompletionResult> results;
      size_t left;
    };
    auto g = std::make_shared<Gather>();
    g->results.resize(jobs.size());
    g->left = jobs.size();
    auto done = [g, res = out->results, on_item](const CompletionResult& r) {
      if (on_item) on_item(r);
      std::lock_guard<std::mutex> lk(g->mu);
      g->results[r.index] = r;
      if (--g->left == 0) res->set(g->results);
    };
    for (auto& j : jobs) {
      auto h = impl_->submit(std::move(j), {}, done);
      if (!h) {  // unloaded mid-batch: what was submitted runs; the rest ends as failed
        CompletionResult r;
        r.index = out->ids.size();
        r.outcome = Outcome::kFailed;
        r.finish_reason = "error";
        r.error = h.error();
        done(r);
        out->ids.push_back(0);
        continue;
      }
      out->ids.push_back((*h)->id);
    }
    return BatchHandle(out);
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("batch: ") + e.what());
  }
}

Result<ChatCompletionHandle> Engine::Impl::openaiCreate(const nlohmann::json& body, bool chat,
                                                        std::function<void(const nlohmann::json&)> on_chunk) {
  auto parsed = chat ? openai::parseChatRequest(body) : openai::parseCompletionRequest(body);
  if (!parsed) return std::move(parsed).error();
  auto job = prepare(parsed->req);
  if (!job) return std::move(job).error();
  auto out = std::make_shared<ChatCompletionJob>();
  out->completion_id = (chat ? "chatcmpl-" : "cmpl-") + randomHex(24);
  out->response = std::make_shared<Pending<nlohmann::json>>();
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::shared_ptr<const ModelAssets> assets = job->assets;
  auto token_text = [assets](int32_t id) {
    const int32_t ids[1] = {id};
    return assets->tokenizer.decode(ids);
  };
  auto builder = std::make_shared<openai::ResponseBuilder>(chat, out->completion_id, created, assets->id, token_text,
                                                           parsed->req.logprobs);
  const bool stream = parsed->stream, usage = parsed->include_usage;
  std::function<void(const Chunk&)> chunk_fn;
  if (stream && on_chunk)
    chunk_fn = [builder, on_chunk](const Chunk& c) {
      for (const auto& j : builder->chunks(c)) on_chunk(j);
    };
  auto done = [builder, on_chunk, stream, usage, resp = out->response](const CompletionResult& r) {
    if (stream && on_chunk && r.outcome != Outcome::kFailed)
      for (const auto& j : builder->finalChunks(r, usage)) on_chunk(j);
    if (r.outcome == Outcome::kFailed && r.error) {
      nlohmann::json e = openai::errorJson(*r.error);
      e["ewgpu"] = openai::extensionJson(r);
      if (stream && on_chunk) on_chunk(e);
      resp->set(std::move(e));
      return;
    }
    resp->set(builder->response(r));
  };
  auto h = submit(std::move(*job), std::move(chunk_fn), std::move(done));
  if (!h) return std::move(h).error();
  out->id = (*h)->id;
  return ChatCompletionHandle(out);
}

Result<ChatCompletionHandle> Engine::ChatCompletions::create(const nlohmann::json& request,
                                                             std::function<void(const nlohmann::json&)> on_chunk) {
  try {
    return engine->impl_->openaiCreate(request, true, std::move(on_chunk));
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("chat.completions.create: ") + e.what());
  }
}

Result<ChatCompletionHandle> Engine::createCompletion(const nlohmann::json& request,
                                                      std::function<void(const nlohmann::json&)> on_chunk) {
  try {
    return impl_->openaiCreate(request, false, std::move(on_chunk));
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("completions.create: ") + e.what());
  }
}

}  // namespace ewgpu
