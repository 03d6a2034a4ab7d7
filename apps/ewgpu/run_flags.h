// The flags of `ewgpu run`, parsed and checked into a plain struct before anything heavy happens (no store, no
// model, no GPU): CLI11 checks each value's type and range; checkRunOptions() does what needs several flags at
// once (-m or MODEL, -p or PROMPT or --file or stdin) and reads the prompt file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "command.h"

namespace ewgpu::cli {

struct RunOptions {
  // What checkRunOptions() settles.
  std::string model;   // a model folder, a store id or a URL
  std::string prompt;  // never empty once checked

  bool chat = false;                  // render through the folder's conversation template
  std::optional<std::string> system;  // --system: the system message (with --chat)
  std::vector<std::string> stop;      // extra stop strings
  uint32_t max_tokens = 128;
  uint32_t steps = 16;              // K: decode steps per GPU submission
  std::optional<uint32_t> context;  // positions per sequence (default: the model's context window)
  SamplingFlags sampling;
  kernels::Activations activations = kernels::Activations::kAuto;
  std::string adapter, cache_dir;
  bool no_pull = false;  // a catalogue id that is not cached is an error instead of a pull
  bool json = false;

  // As given on the command line (checkRunOptions() turns them into model and prompt).
  std::string model_arg, model_flag;
  std::optional<std::string> prompt_arg, prompt_flag, prompt_file;
};

constexpr uint32_t kRunMaxSteps = 32;  // the Forward is built for at most this many steps per submission

// Declares run's positionals (MODEL [PROMPT]) and flags on `app`, with their defaults and ranges.
void addRunFlags(CLI::App& app, RunOptions& o);

// Checks what one flag alone cannot say and fills model and prompt: a model from MODEL or -m (not both); a prompt
// from PROMPT, -p or --file (one of them), else from stdin when it is not a terminal. BAD_REQUEST naming the
// flags on a conflict, an unreadable --file, or an empty prompt.
Status checkRunOptions(RunOptions& o, bool stdin_is_terminal);

}  // namespace ewgpu::cli
