// `ewgpu serve` on the scheduler tests' fake backend (tests/engine/fake_backend.h): the same flags and run loop
// (src/server/serve.h), no GPU, so the HTTP tests (load, fuzz, supersession, preemption, disconnect) run in
// seconds. Model folders are still parsed for real (config, tokenizer, template); the text is "0 1 2 ...".
// Extra flags: --fake-step-ms N (each submission takes N ms, as a GPU's would), --fake-context N.
#include <chrono>
#include <cstdio>
#include <thread>

#include "fake_backend.h"
#include "server/serve.h"

namespace {

// The fake with a submission time: step() sleeps, then advances every busy row by one step.
class SlowFake final : public ewgpu::RowBackend {
 public:
  SlowFake(uint32_t rows, uint32_t context, int step_ms) : fake_(rows, context), step_ms_(step_ms) {}
  uint32_t rowCapacity() const override { return fake_.rowCapacity(); }
  uint32_t contextLength() const override { return fake_.contextLength(); }
  uint32_t vocabSize() const override { return fake_.vocabSize(); }
  ewgpu::Status start(uint32_t row, ewgpu::RowRequest req) override { return fake_.start(row, std::move(req)); }
  std::string stop(uint32_t row) override { return fake_.stop(row); }
  ewgpu::Status setSteps(uint32_t k) override { return fake_.setSteps(k); }
  uint32_t steps() const override { return fake_.steps(); }
  uint32_t maxSteps() const override { return fake_.maxSteps(); }
  ewgpu::Status step(std::vector<ewgpu::RowEvent>& events) override {
    if (step_ms_ > 0 && fake_.busyRows() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    return fake_.step(events);
  }
  bool inFlight() const override { return false; }
  uint64_t oldestTicket() const override { return ewgpu::kNoTicket; }
  ewgpu::Status wait() override { return {}; }

 private:
  ewgpu::test::FakeBackend fake_;
  int step_ms_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int step_ms = 0;
  uint32_t context = 4096;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--fake-step-ms") step_ms = std::atoi(args[i + 1].c_str());
    if (args[i] == "--fake-context") context = (uint32_t)std::atoi(args[i + 1].c_str());
  }
  auto cfg = ewgpu::server::parseServeArgs(args, {"--fake-step-ms", "--fake-context"});
  if (!cfg) {
    std::fprintf(stderr, "error: %s\n", cfg.error().message.c_str());
    return 2;
  }
  const uint32_t rows = cfg->engine.rows;
  cfg->engine.backend_factory = [rows, context, step_ms](
                                    const std::string&, const ewgpu::ModelConfig&,
                                    const ewgpu::Tokenizer&) -> ewgpu::Result<std::unique_ptr<ewgpu::RowBackend>> {
    return std::unique_ptr<ewgpu::RowBackend>(std::make_unique<SlowFake>(rows, context, step_ms));
  };
  return ewgpu::server::runServe(std::move(*cfg));
}
