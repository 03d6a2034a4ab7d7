// `ewgpu run` flags: declaration (CLI11, with ranges) and the cross-flag checks.
#include "run_flags.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace ewgpu::cli {

void addRunFlags(CLI::App& app, RunOptions& o) {
  app.add_option("MODEL", o.model_arg,
                 "a model folder, a store id (pulled first if not cached), a URL, or default (the built-in model; "
                 "a lone first word that names no model is its prompt)");
  app.add_option("PROMPT", o.prompt_arg, "the prompt (else -p, --file, or stdin when it is not a terminal)");
  app.add_option("-m,--model", o.model_flag, "the model, as MODEL");
  app.add_option("-p,--prompt", o.prompt_flag, "the prompt, as PROMPT");
  app.add_option("--file", o.prompt_file, "read the prompt from this file");
  app.add_flag("--chat", o.chat, "render the prompt through the folder's conversation template");
  app.add_option("--system", o.system, "system message (with --chat)");
  app.add_option("-n,--max-tokens", o.max_tokens, "tokens to generate at most")->check(bounded<uint32_t>(1, 1u << 20));
  app.add_option("-c,--context", o.context, "positions per sequence (default: the model's context window)")
      ->check(bounded<uint32_t>(16, 1u << 20));
  addSamplingFlags(app, o.sampling);
  app.add_option("--stop", o.stop, "stop when this text appears (repeatable)")
      ->allow_extra_args(false)
      ->default_str("none");
  app.add_option("--steps", o.steps, "decode steps per GPU submission (K)")->check(bounded<uint32_t>(1, kRunMaxSteps));
  addActivationsFlag(app, o.activations);
  addAdapterFlag(app, o.adapter);
  addCacheDirFlag(app, o.cache_dir);
  app.add_flag("--no-pull", o.no_pull, "do not download a catalogue model that is not cached (an error instead)");
  addJsonFlag(app, o.json);
}

namespace {
Error badFlags(const std::string& message, nlohmann::json detail = nlohmann::json::object()) {
  return makeError(ErrorCode::kBadRequest, message, std::move(detail));
}
}  // namespace

Status checkRunOptions(RunOptions& o, bool stdin_is_terminal) {
  // -m MODEL "prompt": the one positional given is the prompt.
  std::optional<std::string> prompt_pos = o.prompt_arg;
  if (!o.model_flag.empty() && !o.model_arg.empty()) {
    if (prompt_pos) return badFlags("give the model once: MODEL or -m/--model, not both", {{"flags", {"MODEL", "-m"}}});
    prompt_pos = o.model_arg;
    o.model_arg.clear();
  }
  o.model = o.model_flag.empty() ? o.model_arg : o.model_flag;
  if (o.model.empty()) return badFlags("run needs a model: ewgpu run MODEL [PROMPT] (or -m MODEL)");

  const int sources = (prompt_pos ? 1 : 0) + (o.prompt_flag ? 1 : 0) + (o.prompt_file ? 1 : 0);
  if (sources > 1)
    return badFlags("give the prompt once: PROMPT, -p/--prompt or --file", {{"flags", {"PROMPT", "-p", "--file"}}});
  if (prompt_pos) {
    o.prompt = *prompt_pos;
  } else if (o.prompt_flag) {
    o.prompt = *o.prompt_flag;
  } else if (o.prompt_file) {
    std::ifstream in(*o.prompt_file, std::ios::binary);
    if (!in) return badFlags("--file: cannot read " + *o.prompt_file, {{"flag", "--file"}, {"file", *o.prompt_file}});
    std::stringstream ss;
    ss << in.rdbuf();
    o.prompt = ss.str();
  } else if (!stdin_is_terminal) {
    o.prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  if (!prompt_pos && !o.prompt_flag && !o.prompt_file && o.prompt.empty())
    return badFlags("run needs a prompt: ewgpu run MODEL PROMPT (or -p TEXT, --file PATH, or text on stdin)");
  if (o.prompt.empty()) return badFlags("the prompt is empty", {{"flag", o.prompt_file ? "--file" : "PROMPT"}});
  if (o.system && !o.chat) return badFlags("--system needs --chat", {{"flag", "--system"}});
  for (const auto& s : o.stop)
    if (s.empty()) return badFlags("--stop: an empty stop string", {{"flag", "--stop"}});
  return {};
}

}  // namespace ewgpu::cli
