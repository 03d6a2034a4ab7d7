// The ewgpu CLI: each subcommand lives in its own cmd_*.cpp and registers itself here, so layers add
// commands without touching main.cpp. Arguments are parsed by CLI11: a command declares its flags (with their
// types, defaults and ranges) on its own CLI::App, and everything is parsed and range-checked before the command
// runs, so a typo never costs a model load. A command returns the process exit code.
//
// Exit codes: 0 success, 1 a typed error (printed as "error: CODE: message {detail}"), 2 a usage error (unknown
// flag, wrong type, value out of range; printed by main before anything runs), 130 interrupted (Ctrl-C).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/gemv_op.h"
#include "kernels/sampling.h"

namespace ewgpu::cli {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

using Runner = std::function<int()>;

struct Command {
  std::string name;     // "probe", "bench gpu" (two words for grouped commands)
  std::string summary;  // one sentence
  // Declares the command's positionals and flags on `app` (its CLI11 subcommand, already named and described)
  // and returns what runs once they have been parsed. The values live in state the runner captures.
  std::function<Runner(CLI::App& app)> define;
};

// Registers at static-initialisation time: `static cli::Registration r{{...}};` in a cmd_*.cpp.
struct Registration {
  explicit Registration(Command c);
};

const std::vector<Command>& commands();

// Flags of the whole program (declared on the root app, accepted after any subcommand).
struct GlobalFlags {
  bool verbose = false;  // --verbose: keep the Vulkan loader's messages (suppressed otherwise)
};
const GlobalFlags& globalFlags();

// A CLI11 check that the value parses as T and lies in [lo, hi]. The error names the flag (CLI11 prefixes it):
// "--max-tokens: 'abc' is not an integer", "--max-tokens: -1 is outside [1, 1048576]".
template <class T>
CLI::Validator bounded(T lo, T hi) {
  std::ostringstream desc;
  desc << "in [" << lo << ", " << hi << "]";
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        std::ostringstream outside;
        outside << s << " is outside [" << lo << ", " << hi << "]";
        T v{};
        if (!CLI::detail::lexical_cast(s, v)) {
          long double wide = 0;  // a number, but not one of T ("-1" for an unsigned flag, "1e30" for an int)
          const bool number = CLI::detail::lexical_cast(s, wide) && wide == wide;
          if (number && (!std::numeric_limits<T>::is_integer || wide == (long double)(long long)wide))
            return outside.str();
          return "'" + s + "' is not " + (std::numeric_limits<T>::is_integer ? "an integer" : "a number");
        }
        if (!(v >= lo && v <= hi)) return outside.str();  // NaN fails too
        return "";
      },
      desc.str());
}

// Shared flag groups. Each adds its flags to `app` with their help text, default and range.
void addJsonFlag(CLI::App& app, bool& json);
void addAdapterFlag(CLI::App& app, std::string& adapter);  // --adapter auto|gpu|swiftshader
void addCacheDirFlag(CLI::App& app, std::string& cache_dir);
// --activations auto|f32|int8|int16 (the q4 decode GEMVs' x precision).
void addActivationsFlag(CLI::App& app, kernels::Activations& activations);

// --temperature (-t, --temp), --top-p, --top-k, --seed (-s): where given, they override a request's values.
struct SamplingFlags {
  std::optional<float> temperature, top_p;
  std::optional<uint32_t> top_k;
  std::optional<uint64_t> seed;
  void applyTo(SamplingParams& p) const;
};
void addSamplingFlags(CLI::App& app, SamplingFlags& s);

// Prints an Error as "error: CODE: message" (or as JSON with --json) on stderr and returns kExitError.
int reportError(const Error& e, bool json);
// A usage error found after parsing (a cross-flag check): printed like CLI11's, returns kExitUsage.
int usageError(const std::string& message, bool json);

}  // namespace ewgpu::cli
