// The built-in default model: a 5.8M-parameter Qwen3-shaped English model the project trained itself
// (tools/default_model/, docs/default-model.md), in q4f16_1, embedded in the binary so that a fresh clone's
// `ewgpu run "Once upon a time"` answers offline. It is the store id `default`. On first use its files are
// written from the embedded bytes into <cache>/builtin/default-<version>/ (version: a digest of the embedded
// files, so a new model gets a new folder), that folder is registered as a local model (addLocal: validated,
// linked into the cache, no URL), and its shards are checked against tensor-cache.json's md5sum like any store
// entry (verify --md5). Later calls only check that the registered files are there with their sizes.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/embedded_file.h"
#include "base/error.h"

namespace ewgpu {

class ModelStore;

inline constexpr std::string_view kDefaultModelId = "default";

// The embedded folder: mlc-chat-config.json, tensor-cache.json, params_shard_*.bin, tokenizer.json.
std::span<const EmbeddedFile> defaultModelFiles();

// The folder to load the default model from (inside the store's cache), materialised and registered on first
// use. IO_ERROR when the cache cannot be written; INVALID_MODEL_FOLDER {file, problem: md5_mismatch} when
// embedded bytes do not match the md5 recorded at build time (a corrupt binary).
Result<std::string> defaultModelDir(ModelStore& store);

}  // namespace ewgpu
