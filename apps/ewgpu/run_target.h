// What `ewgpu run [MODEL] [PROMPT]` (and a future `chat`) runs. The first positional names the model when it is
// the built-in id `default`, a model folder, a path-like word, a URL, a registered id or a catalogue id;
// otherwise, when it is the only positional, it is the prompt, and the built-in default model answers it
// (store/default_model.h). With no positional the default model runs with no prompt given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "store/model_store.h"

namespace ewgpu::cli {

struct RunTarget {
  std::string model;                  // what to load (Engine::load): the first positional, or "default"
  std::optional<std::string> prompt;  // the prompt positional, when one was given
  bool is_default = false;            // the built-in default model
};

// UNKNOWN_MODEL when two positionals are given and the first names no model; IO_ERROR when the store cannot be
// opened (its registry says which ids are registered). Nothing is resolved or downloaded here.
Result<RunTarget> resolveRunTarget(const std::vector<std::string>& positionals, const StoreOptions& options);

}  // namespace ewgpu::cli
