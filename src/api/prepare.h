// The host-neutral half of a request, shared by both hosts of the engine: the native Engine (src/api/engine.cpp,
// threads) and the browser host (src/web/web_engine.cpp, one thread stepped by the worker). A model's CPU assets
// are parsed from its folder once (loadModelAssets); a CompletionRequest checked against them (prompt rendered,
// context checked, sampling defaults and overrides, stop strings, structured output compiled) becomes the
// scheduler's JobSpec (prepareJob). No threads, no GPU objects, no files beyond the folder's JSON.
#pragma once

#include "engine/scheduler.h"
#include "ewgpu/types.h"
#include "grammar/vocabulary.h"
#include "model/model_folder.h"
#include "tokenizer/conv_template.h"
#include "tokenizer/tokenizer.h"

#include <memory>
#include <optional>
#include <string>

namespace ewgpu {

// The CPU side of a resident model, immutable once loaded: callers render prompts with it.
struct ModelAssets {
  std::string id, dir;
  ModelConfig config;
  Tokenizer tokenizer;
  std::optional<ConvTemplate> conv;
  SamplingParams defaults;  // the folder's sampling values and the template's stop ids
  std::vector<std::string> stop_strings;
  uint32_t context = 0;  // positions per row actually used (set by the host once the rows exist)
  std::shared_ptr<const grammar::TokenVocabulary> vocab;  // the tokenizer's token bytes, for structured output
};

// The tokenizer, the conversation template (its ids checked against the vocabulary), the sampling defaults, the
// template's stop strings and the grammar vocabulary of an opened folder. context is left 0.
Result<std::shared_ptr<ModelAssets>> loadModelAssets(const std::string& id, const std::string& dir,
                                                     const ModelFolder& folder);

struct PrepareOptions {
  uint32_t default_max_tokens = 256;  // when the request gives none (clamped to the context left)
  uint64_t seed = 0;                  // when the request gives none: the host's own random source
};

// The request against its model: BAD_REQUEST (detail.field), CONTEXT_TOO_LONG, or a template's error; the host
// resolves which model (and reports NO_MODEL / UNKNOWN_MODEL) before calling this.
Result<JobSpec> prepareJob(const ModelAssets& a, const CompletionRequest& req, const PrepareOptions& o);

// Prefix reuse (docs/prefix-reuse.md): how many of the prompt's tokens `ids` a chat's leading system message
// renders to (the common prefix of its own render and the whole prompt's), prepareJob's RowRequest::shared_prefix,
// so a hybrid model snapshots its state there and later requests with the same system prompt resume from it
// (attention-only models share those pages through the prefix index anyway). 0 when there is no system message
// followed by others, no template, or the renders share less than a page (16 tokens).
uint32_t systemPrefixTokens(const ModelAssets& a, const CompletionRequest& req, const std::vector<int32_t>& ids);

}  // namespace ewgpu
