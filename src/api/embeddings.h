// OpenAI's embeddings shape, host-neutral (the native Engine and the browser host both use it): request JSON
// checked against an embedding model's assets -> token sequences, and vectors -> the response JSON.
//
// Request: {"input": string | [string] | [int] | [[int]], "model"?: string, "encoding_format"?: "float" | "base64",
//           "dimensions"?: int (must equal the model's width), "user"?: string}
// Strings are tokenized with the tokenizer's special tokens around them ([CLS] text [SEP], the post_processor's
// template, as WebLLM's and MLC's embedding engines do); token arrays are used as given (as WebLLM does).
// Response: {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [floats]}], "model",
//            "usage": {"prompt_tokens", "total_tokens"}}; with "base64" each embedding is the base64 of its
//            little-endian float32 bytes (what the official openai clients ask for by default).
// Errors: BAD_REQUEST naming the field ("input", "input[3]", "encoding_format", "dimensions", "model"),
// CONTEXT_TOO_LONG (field "input[i]") for an input longer than the model's position embeddings.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/prepare.h"
#include "base/error.h"

namespace ewgpu {

struct EmbeddingRequest {
  std::string model;                       // "" = the current model
  std::vector<std::vector<int32_t>> inputs;  // filled by prepareEmbeddings
  uint64_t prompt_tokens = 0;
  bool base64 = false;  // encoding_format "base64"
};

inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

// The model field only (the host resolves the model before tokenizing): BAD_REQUEST when not a string.
Result<std::string> embeddingModelField(const nlohmann::json& body);
// Every other field, against the resolved model. BAD_REQUEST when the model is not an embedding model.
Result<EmbeddingRequest> prepareEmbeddings(const ModelAssets& a, const nlohmann::json& body);
// The response object for the vectors (in input order) of a prepared request.
nlohmann::json embeddingsResponse(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                  uint64_t prompt_tokens, bool base64 = false);

}  // namespace ewgpu
