#include "chat_repl.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

namespace ewgpu::cli {
namespace {

std::atomic<bool> g_interrupt{false};
void onInterrupt(int) { g_interrupt = true; }

// One line from `in` without its newline; false at EOF.
bool readLine(std::FILE* in, std::string& line) {
  line.clear();
  for (;;) {
    const int c = std::fgetc(in);
    if (c == EOF) {
      if (std::ferror(in) && errno == EINTR) {  // Ctrl-C at the prompt: a fresh prompt
        std::clearerr(in);
        line.clear();
        return true;
      }
      return !line.empty();
    }
    if (c == '\n') return true;
    line += (char)c;
  }
}

}  // namespace

int runChatRepl(Engine& engine, const ChatOptions& opts, std::FILE* in, std::FILE* out) {
  struct sigaction sa {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: Ctrl-C at the prompt interrupts the read
  struct sigaction old {};
  sigaction(SIGINT, &sa, &old);
  std::vector<ChatMessage> history;
  std::string system = opts.system;
  const bool tty = isatty(fileno(in));
  std::fprintf(out, "chatting with %s (/reset, /system TEXT, /exit; Ctrl-C stops a reply, Ctrl-D exits)\n",
               opts.model.empty() ? engine.current().c_str() : opts.model.c_str());
  std::string line;
  for (;;) {
    if (tty) std::fprintf(out, ">>> ");
    std::fflush(out);
    g_interrupt = false;
    if (!readLine(in, line)) break;
    if (line.empty()) continue;
    if (line == "/exit" || line == "/bye") break;
    if (line == "/reset") {
      history.clear();
      std::fprintf(out, "(history cleared)\n");
      continue;
    }
    if (line.rfind("/system", 0) == 0) {
      system = line.size() > 8 ? line.substr(8) : "";
      std::fprintf(out, "(system message %s)\n", system.empty() ? "cleared" : "set");
      continue;
    }
    if (line[0] == '/') {
      std::fprintf(out, "(unknown command %s: /reset, /system TEXT, /exit)\n", line.c_str());
      continue;
    }
    history.push_back({"user", line});
    CompletionRequest req = opts.sampling;
    req.model = opts.model;
    req.priority = Priority::kInteractive;
    req.messages.clear();
    if (!system.empty()) req.messages.push_back({"system", system});
    req.messages.insert(req.messages.end(), history.begin(), history.end());
    auto job = engine.complete(req, [out](const Chunk& c) {
      std::fwrite(c.delta.data(), 1, c.delta.size(), out);
      std::fflush(out);
    });
    if (!job) {
      std::fprintf(out, "error: %s\n", job.error().message.c_str());
      history.pop_back();
      continue;
    }
    // Bounded: the reply ends by itself (max_tokens), or on Ctrl-C.
    const CompletionResult* r = nullptr;
    while (!(r = (*job)->result->waitFor(20)))
      if (g_interrupt.exchange(false)) engine.cancel((*job)->id);
    if (r->error) std::fprintf(out, "\nerror: %s", r->error->message.c_str());
    if (r->outcome == Outcome::kCancelled) std::fprintf(out, " [stopped]");
    std::fprintf(out, "\n");
    history.push_back({"assistant", r->text});
  }
  std::fprintf(out, "\n");
  sigaction(SIGINT, &old, nullptr);
  return 0;
}

}  // namespace ewgpu::cli
