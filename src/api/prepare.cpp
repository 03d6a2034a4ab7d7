// The host-neutral request preparation (api/prepare.h): one implementation for the native and the browser host.
#include "api/prepare.h"

#include "grammar/json_schema.h"
#include "grammar/tokenizer_vocabulary.h"
#include "runtime/local_engine.h"

#include <algorithm>

namespace ewgpu {

Result<std::shared_ptr<ModelAssets>> loadModelAssets(const std::string& id, const std::string& dir,
                                                     const ModelFolder& folder) {
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  if (!tok) return std::move(tok).error();
  auto a = std::make_shared<ModelAssets>(ModelAssets{id, dir, folder.config(), std::move(*tok), {}, {}, {}, 0, {}});
  if (!a->config.conv_template.is_null()) {
    auto conv = ConvTemplate::fromJson(a->config.conv_template);
    if (!conv) return std::move(conv).error();
    EWGPU_TRY(checkTemplateIds(*conv, a->config.vocab));
    a->conv.emplace(std::move(*conv));
  }
  a->vocab = grammar::vocabularyOf(a->tokenizer);  // ~0.1 s at 151k tokens (docs/structured-output.md)
  a->defaults = defaultSampling(a->config, a->conv ? &*a->conv : nullptr);
  if (a->conv) a->stop_strings = a->conv->stopStrings();
  return a;
}

uint32_t systemPrefixTokens(const ModelAssets& a, const CompletionRequest& req, const std::vector<int32_t>& ids) {
  if (!a.conv || req.messages.size() < 2 || req.messages[0].role != "system") return 0;
  auto sys = a.conv->renderTokens(a.tokenizer, std::span<const ChatMessage>(req.messages.data(), 1));
  if (!sys) return 0;  // a template that needs more than a system message: no snapshot point
  size_t n = 0;
  while (n < sys->size() && n < ids.size() && (*sys)[n] == ids[n]) ++n;
  return n >= 16 ? (uint32_t)n : 0;
}

Result<JobSpec> prepareJob(const ModelAssets& a, const CompletionRequest& req, const PrepareOptions& o) {
  if (a.config.isEmbedding())
    return makeError(ErrorCode::kBadRequest,
                     "model: " + a.id + " is an embedding model (" + a.config.model_type +
                         "); use embeddings.create, not completions",
                     {{"field", "model"}, {"model", a.id}, {"model_type", a.config.model_type}});
  std::vector<int32_t> ids;
  const char* prompt_field = "messages";
  if (req.prompt && !req.messages.empty()) return badField("prompt", "give either prompt or messages, not both");
  if (req.prompt) {
    prompt_field = "prompt";
    if (req.prompt->empty()) return badField("prompt", "must not be empty");
    ids = a.tokenizer.encode(*req.prompt);
  } else {
    if (req.messages.empty()) return badField("messages", "required (a non-empty list)");
    for (size_t i = 0; i < req.messages.size(); ++i) {
      const std::string& role = req.messages[i].role;
      if (role != "system" && role != "user" && role != "assistant" && role != "tool")
        return badField("messages[" + std::to_string(i) + "].role", "must be system, user, assistant or tool",
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
  if (ids.empty()) return badField(prompt_field, "renders to no tokens");
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
  s.seed = req.seed ? *req.seed : o.seed;
  if (req.max_tokens && *req.max_tokens == 0) return badField("max_tokens", "must be at least 1");
  s.max_tokens = std::min<uint64_t>(req.max_tokens.value_or(o.default_max_tokens), a.context - ids.size());
  s.logprobs = req.logprobs;
  if (req.top_logprobs && !req.logprobs) return badField("top_logprobs", "needs logprobs");
  s.n_logprobs = req.top_logprobs;
  s.logit_bias = req.logit_bias;
  EWGPU_TRY(s.validate(a.config.vocab));
  for (const auto& st : req.stop)
    if (st.empty()) return badField("stop", "stop strings must not be empty");
  if (req.session.size() > 256) return badField("session", "longer than 256 bytes");
  if (req.task.size() > 256) return badField("task", "longer than 256 bytes");

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
      return badField("response_format.type", "must be text, json_object or json_schema", {{"value", rf.type}});
    }
  }

  JobSpec j;
  j.model = a.id;
  j.row.shared_prefix = systemPrefixTokens(a, req, ids);
  j.row.prompt = std::move(ids);
  j.row.sampling = std::move(s);
  j.row.stop_strings = a.stop_strings;
  j.row.stop_strings.insert(j.row.stop_strings.end(), req.stop.begin(), req.stop.end());
  j.row.grammar = std::move(grammar);
  j.priority = req.priority;
  j.session = req.session;
  j.task = req.task;
  j.preemptible = req.preemptible;
  return j;
}

}  // namespace ewgpu
