// ewgpu: command-line host of the engine. Subcommands register themselves (command.h); main builds one CLI11
// app from them ("bench decode" becomes subcommand "decode" of "bench"), parses and range-checks every argument,
// then runs the chosen command.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include "command.h"
#include "gpu/context.h"

#ifndef EWGPU_VERSION
#define EWGPU_VERSION "unknown"
#endif

namespace ewgpu::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
GlobalFlags g_flags;
}  // namespace

Registration::Registration(Command c) { registry().push_back(std::move(c)); }
const std::vector<Command>& commands() { return registry(); }
const GlobalFlags& globalFlags() { return g_flags; }

void addJsonFlag(CLI::App& app, bool& json) {
  app.add_flag("--json", json, "print one JSON document on stdout (errors as JSON on stderr)");
}

void addAdapterFlag(CLI::App& app, std::string& adapter) {
  app.add_option("--adapter", adapter, "WebGPU adapter: auto, gpu or swiftshader (default: $EWGPU_ADAPTER, else auto)")
      ->check(CLI::IsMember({"auto", "gpu", "swiftshader"}));
}

void addCacheDirFlag(CLI::App& app, std::string& cache_dir) {
  app.add_option("--cache-dir", cache_dir,
                 "model cache folder (default: $EWGPU_CACHE_DIR, else $XDG_CACHE_HOME/everything-webgpu)");
}

void addActivationsFlag(CLI::App& app, kernels::Activations& activations) {
  app.add_option_function<std::string>(
         "--activations", [&activations](const std::string& s) { activations = *kernels::activationsFromName(s); },
         "q4 decode GEMV input precision: auto, f32, int8 or int16 (auto: int16 on GPUs with packed dot4, the "
         "MLP's int8 but gemma4's, f32 on CPU adapters; int16 or int8 applies to every projection)")
      ->check(CLI::IsMember({"auto", "f32", "int8", "int16"}))
      ->default_str("auto");
}

void SamplingFlags::applyTo(SamplingParams& p) const {
  if (temperature) p.temperature = *temperature;
  if (top_p) p.top_p = *top_p;
  if (top_k) p.top_k = *top_k;
  if (seed) p.seed = *seed;
}

void addSamplingFlags(CLI::App& app, SamplingFlags& s) {
  app.add_option("-t,--temp,--temperature", s.temperature, "sampling temperature, 0 = greedy (default: the folder's)")
      ->check(bounded(0.0f, 100.0f));
  app.add_option("--top-p", s.top_p, "nucleus sampling mass, 1 = off (default: the folder's)")
      ->check(bounded(1e-6f, 1.0f));
  app.add_option("--top-k", s.top_k, "keep the K most likely tokens, 0 = off (default 0)")
      ->check(bounded<uint32_t>(0, 1u << 24));
  app.add_option("-s,--seed", s.seed, "sampling seed (default 0)")
      ->check(bounded<uint64_t>(0, std::numeric_limits<uint64_t>::max()));
}

int reportError(const Error& e, bool json) {
  if (json)
    std::cerr << nlohmann::json{{"error", e.toJson()}}.dump() << "\n";
  else
    std::cerr << "error: " << e.toString() << "\n";
  return kExitError;
}

int usageError(const std::string& message, bool json) {
  if (json)
    std::cerr << nlohmann::json{{"error", makeError(ErrorCode::kBadRequest, message).toJson()}}.dump() << "\n";
  else
    std::cerr << "ewgpu: " << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

namespace {

// "MODEL [PROMPT]": the positionals of a subcommand as its usage shows them.
std::string positionalsOf(const CLI::App& app) {
  std::string s;
  for (const CLI::Option* o : app.get_options([](const CLI::Option* o) { return o->get_positional(); })) {
    std::string n = o->get_name();
    if (o->get_items_expected_max() > 1) n += "...";
    s += " " + (o->get_required() ? n : "[" + n + "]");
  }
  return s;
}

struct Built {
  std::unique_ptr<CLI::App> app;
  std::vector<std::pair<const CLI::App*, Runner>> runners;      // leaf subcommand -> its runner
  std::vector<std::pair<std::string, const CLI::App*>> leaves;  // "bench decode" -> app, registration order
};

Built build() {
  Built b;
  b.app = std::make_unique<CLI::App>("ewgpu: a local LLM engine whose every kernel is WGSL on WebGPU", "ewgpu");
  CLI::App& root = *b.app;
  root.option_defaults()->always_capture_default();
  root.get_formatter()->column_width(42);
  root.set_version_flag("--version", std::string("ewgpu ") + EWGPU_VERSION);
  root.add_flag("--verbose", g_flags.verbose, "show the Vulkan loader's messages (hidden otherwise)");
  root.fallthrough();  // root flags (--verbose) may follow the subcommand
  root.require_subcommand(1);
  std::map<std::string, CLI::App*> groups;
  for (const Command& c : commands()) {
    CLI::App* parent = &root;
    std::string leaf = c.name;
    if (auto sp = c.name.find(' '); sp != std::string::npos) {
      const std::string group = c.name.substr(0, sp);
      leaf = c.name.substr(sp + 1);
      auto it = groups.find(group);
      if (it == groups.end()) {
        CLI::App* g = root.add_subcommand(group, group + " commands");
        g->require_subcommand(1);
        g->fallthrough();
        it = groups.emplace(group, g).first;
      }
      parent = it->second;
    }
    CLI::App* sub = parent->add_subcommand(leaf, c.summary);
    sub->fallthrough();
    b.runners.emplace_back(sub, c.define(*sub));
    b.leaves.emplace_back(c.name, sub);
  }
  // Group summaries name their members: "bench commands: decode, prefill, gpu, tokenizer".
  for (auto& [group, app] : groups) {
    std::string members;
    for (const CLI::App* s : app->get_subcommands({})) members += (members.empty() ? "" : ", ") + s->get_name();
    app->description(group + " commands: " + members);
  }
  return b;
}

void printUsage(const Built& b) {
  std::printf("ewgpu: a local LLM engine whose every kernel is WGSL on WebGPU\n\nusage:\n");
  for (const auto& [name, app] : b.leaves) {
    std::string line = name + positionalsOf(*app) + " [OPTIONS]";
    std::printf("  ewgpu %-44s %s\n", line.c_str(), app->get_description().c_str());
  }
  std::printf(
      "\n  ewgpu --version, ewgpu COMMAND --help (every flag with its default and range); --verbose keeps\n"
      "  the Vulkan loader's messages.\n");
}

bool wantsJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--json") return true;
  return false;
}

}  // namespace
}  // namespace ewgpu::cli

int main(int argc, char** argv) {
  using namespace ewgpu::cli;
  Built b = build();
  const std::string first = argc > 1 ? argv[1] : "";
  if (argc == 1 || first == "-h" || first == "--help" || first == "help") {
    printUsage(b);
    return argc == 1 ? kExitUsage : 0;
  }
  bool known = false;
  for (const CLI::App* sub : b.app->get_subcommands({})) known |= sub->get_name() == first;
  if (first[0] != '-' && !known) {
    usageError("unknown command '" + first + "' (ewgpu --help lists them)", wantsJson(argc, argv));
    return kExitUsage;
  }
  try {
    b.app->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return b.app->exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return b.app->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return b.app->exit(e);
  } catch (const CLI::ParseError& e) {
    return usageError(e.what(), wantsJson(argc, argv));
  }
  // Dawn and the Vulkan loader warn on stderr about every driver they cannot use (three lines on a machine with no
  // GPU driver, before SwiftShader is found); --verbose keeps them.
  ewgpu::gpu::setDriverMessagesQuiet(!globalFlags().verbose);
  const bool json = wantsJson(argc, argv);
  for (const auto& [app, run] : b.runners) {
    if (!app->parsed()) continue;
    try {
      return run();
    } catch (const std::exception& e) {  // a bug, not an expected failure: report it, never abort silently
      std::fprintf(stderr, "ewgpu: internal error: %s\n", e.what());
      return 70;
    }
  }
  return usageError("no command given", json);
}
