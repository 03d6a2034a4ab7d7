// The interactive multi-turn chat of `ewgpu chat MODEL` (and of `ewgpu run MODEL` with no prompt): the
// history is kept between turns; /reset clears it, /system TEXT sets the system message, /exit or Ctrl-D
// leaves, Ctrl-C stops the reply being written and keeps the session (the partial reply stays in the history).
#pragma once

#include <cstdio>
#include <string>

#include "ewgpu/engine.h"

namespace ewgpu::cli {

struct ChatOptions {
  std::string model;           // a resident model id ("" = the current one)
  std::string system;          // the first system message ("" = none)
  CompletionRequest sampling;  // temperature, top_p, seed, max_tokens as given on the command line
};

// Reads turns from `in` until EOF or /exit, writes replies to `out`. Returns the exit code.
int runChatRepl(Engine& engine, const ChatOptions& opts, std::FILE* in, std::FILE* out);

}  // namespace ewgpu::cli
