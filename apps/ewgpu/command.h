// The ewgpu CLI: each subcommand lives in its own cmd_*.cpp and registers itself here, so layers add
// commands without touching main.cpp. A command returns the process exit code.
#pragma once

#include "base/error.h"
#include "kernels/gemv_op.h"
#include "kernels/sampling.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ewgpu::cli {

using Args = std::vector<std::string>;  // arguments after the subcommand name

struct Command {
  std::string name;     // "probe", "bench gpu" (two words for grouped commands)
  std::string usage;    // one line: "probe [--json]"
  std::string summary;  // one sentence
  std::function<int(const Args&)> run;
};

// Registers at static-initialisation time: `static cli::Registration r{{...}};` in a cmd_*.cpp.
struct Registration {
  explicit Registration(Command c);
};

const std::vector<Command>& commands();

// Small argument helpers shared by commands.
bool hasFlag(const Args& a, const std::string& flag);
// Value after `--name` (or `--name=value`); empty optional when absent.
std::optional<std::string> flagValue(const Args& a, const std::string& name);
// Positional arguments: everything that is not a --flag or the value of a flag in `valued`.
std::vector<std::string> positionals(const Args& a, const std::vector<std::string>& valued);

// --activations auto|f32|int8|int16 (the q4 decode GEMVs' x precision, kernels::Activations); kAuto when absent.
Result<kernels::Activations> activationsFlag(const Args& a);

// --temperature, --top-p, --top-k, --seed, where given, override those fields of `p`.
void applySamplingFlags(const Args& a, SamplingParams& p);

// Prints an Error as "error: CODE: message" (or as JSON with --json) on stderr and returns its exit code (1).
int reportError(const Error& e, bool json);

}  // namespace ewgpu::cli
