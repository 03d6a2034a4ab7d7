// ewgpu: command-line host of the engine. Subcommands register themselves (command.h).
#include "command.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <iostream>

namespace ewgpu::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace

Registration::Registration(Command c) { registry().push_back(std::move(c)); }
const std::vector<Command>& commands() { return registry(); }

bool hasFlag(const Args& a, const std::string& flag) {
  for (const auto& s : a)
    if (s == flag) return true;
  return false;
}

std::optional<std::string> flagValue(const Args& a, const std::string& name) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == name && i + 1 < a.size()) return a[i + 1];
    if (a[i].rfind(name + "=", 0) == 0) return a[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

std::vector<std::string> positionals(const Args& a, const std::vector<std::string>& valued) {
  std::vector<std::string> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& s = a[i];
    if (s.rfind("--", 0) == 0) {
      bool takes = false;
      for (const auto& v : valued) takes |= (s == v);
      if (takes) ++i;
      continue;
    }
    out.push_back(s);
  }
  return out;
}

Result<kernels::Activations> activationsFlag(const Args& a) {
  auto v = flagValue(a, "--activations");
  if (!v) return kernels::Activations::kAuto;
  if (auto act = kernels::activationsFromName(*v)) return *act;
  return makeError(ErrorCode::kBadRequest, "--activations takes auto, f32, int8 or int16", {{"value", *v}});
}

void applySamplingFlags(const Args& a, SamplingParams& p) {
  if (auto v = flagValue(a, "--temperature")) p.temperature = std::stof(*v);
  if (auto v = flagValue(a, "--top-p")) p.top_p = std::stof(*v);
  if (auto v = flagValue(a, "--top-k")) p.top_k = (uint32_t)std::stoul(*v);
  if (auto v = flagValue(a, "--seed")) p.seed = std::stoull(*v);
}

int reportError(const Error& e, bool json) {
  if (json)
    std::cerr << nlohmann::json{{"error", e.toJson()}}.dump() << "\n";
  else
    std::cerr << "error: " << e.toString() << "\n";
  return 1;
}

}  // namespace ewgpu::cli

static void printUsage() {
  std::printf("ewgpu: a local LLM engine whose every kernel is WGSL on WebGPU\n\nusage:\n");
  for (const auto& c : ewgpu::cli::commands()) std::printf("  ewgpu %-44s %s\n", c.usage.c_str(), c.summary.c_str());
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    printUsage();
    return args.empty() ? 2 : 0;
  }
  // Longest match first: "bench gpu" before "bench".
  const ewgpu::cli::Command* best = nullptr;
  size_t used = 0;
  for (const auto& c : ewgpu::cli::commands()) {
    size_t words = 1 + (size_t)std::count(c.name.begin(), c.name.end(), ' ');
    if (words > args.size()) continue;
    std::string joined = args[0];
    for (size_t i = 1; i < words; ++i) joined += " " + args[i];
    if (joined == c.name && words > used) {
      best = &c;
      used = words;
    }
  }
  if (!best) {
    std::fprintf(stderr, "ewgpu: unknown command '%s'\n\n", args[0].c_str());
    printUsage();
    return 2;
  }
  ewgpu::cli::Args rest(args.begin() + (long)used, args.end());
  try {
    return best->run(rest);
  } catch (const std::invalid_argument& e) {  // std::stoul & co. on a flag value that is not a number
    return ewgpu::cli::reportError(
        ewgpu::makeError(ewgpu::ErrorCode::kBadRequest, "invalid number in the arguments", {{"what", e.what()}}),
        ewgpu::cli::hasFlag(rest, "--json"));
  } catch (const std::out_of_range& e) {
    return ewgpu::cli::reportError(
        ewgpu::makeError(ewgpu::ErrorCode::kBadRequest, "number out of range in the arguments", {{"what", e.what()}}),
        ewgpu::cli::hasFlag(rest, "--json"));
  } catch (const std::exception& e) {  // a bug, not an expected failure: report it, never abort silently
    std::fprintf(stderr, "ewgpu: internal error: %s\n", e.what());
    return 70;
  }
}
