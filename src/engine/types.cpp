// Names and JSON forms of the engine's vocabulary (include/ewgpu/types.h).
#include "ewgpu/types.h"

namespace ewgpu {

std::string_view priorityName(Priority p) {
  switch (p) {
    case Priority::kInteractive: return "interactive";
    case Priority::kNormal: return "normal";
    case Priority::kBackground: return "background";
  }
  return "normal";
}

Result<Priority> priorityFromName(std::string_view name) {
  for (Priority p : {Priority::kInteractive, Priority::kNormal, Priority::kBackground})
    if (name == priorityName(p)) return p;
  return makeError(ErrorCode::kBadRequest, "priority must be interactive, normal or background",
                   {{"field", "priority"}, {"value", std::string(name)},
                    {"allowed", {"interactive", "normal", "background"}}});
}

std::string_view outcomeName(Outcome o) {
  switch (o) {
    case Outcome::kCompleted: return "completed";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kPreempted: return "preempted";
    case Outcome::kSuperseded: return "superseded";
    case Outcome::kFailed: return "failed";
  }
  return "failed";
}

nlohmann::json EngineState::toJson() const {
  nlohmann::json ms = nlohmann::json::array();
  for (const auto& m : models)
    ms.push_back({{"id", m.id}, {"status", m.status}, {"folder", m.folder}, {"keepResident", m.keep_resident},
                  {"current", m.current}, {"rows", m.rows}, {"rowsBusy", m.rows_busy},
                  {"contextWindow", m.context_window}, {"decodeTokS", m.decode_tok_s}});
  return {{"models", ms},
          {"queued", {{"interactive", queued[0]}, {"normal", queued[1]}, {"background", queued[2]}}},
          {"running", running},
          {"jobs",
           {{"completed", completed}, {"failed", failed}, {"cancelled", cancelled}, {"preempted", preempted},
            {"superseded", superseded}}},
          {"generatedTokens", generated_tokens}};
}

nlohmann::json Features::toJson() const {
  return {{"decodeSteps", decode_steps}, {"rows", rows},           {"maxRows", max_rows},
          {"taskShare", task_share},     {"gpuSampling", gpu_sampling}, {"batchedDecode", batched_decode},
          {"kvReuse", kv_reuse},         {"structuredOutput", structured_output}};
}

}  // namespace ewgpu
