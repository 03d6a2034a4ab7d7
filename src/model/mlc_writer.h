// Internal pieces shared by writeMlcFolder and the streaming real-shape writer (tiny_model.cpp): tokenizer
// facts, config finalisation, per-record encoding, and the files written around the shards.
#pragma once

#include <map>
#include <string>

#include "model/expected_params.h"
#include "model/shard_writer.h"
#include "model/tiny_model.h"

namespace ewgpu {

struct TokenizerFacts {
  int vocab = 0;                     // max id + 1 over model.vocab and added_tokens
  std::map<std::string, int> added;  // added token content -> id
  nlohmann::json info;               // tokenizer_info (mlc-format.md §6.2)
};
Result<TokenizerFacts> readTokenizerFacts(const std::string& tokenizer_json_path);

// Fills conv_template (family default), adapts its stop/prefix ids to the tokenizer's added tokens,
// tokenizer_info and tokenizer_files.
ModelConfig finalizeWriterConfig(ModelConfig c, const TokenizerFacts& tok);

// Encodes `n` values for a record of dtype `dtype` (f16, float32 stored as bf16, bf16) and appends them.
Status writeFloatValues(ShardWriter& w, DType dtype, const float* values, size_t n);

// Creates out_dir (and parents).
Status makeDirs(const std::string& dir);

// Closes the shards, writes tensor-cache.json, mlc-chat-config.json and copies tokenizer.json.
Status finishMlcFolder(const std::string& out_dir, const ModelConfig& c, ShardWriter& w,
                       const std::string& tokenizer_json_path);

}  // namespace ewgpu
