// step_problem(), the StepPlanning names and the misuse refusals (see leanattn/decode_step.hpp):
// the rules every executor's DecodeStep applies, in one place.
#include "leanattn/decode_step.hpp"

#include <algorithm>
#include <string>

#include "leanattn/error.hpp"

namespace leanattn {

std::string_view step_planning_name(StepPlanning planning) {
  return planning == StepPlanning::host ? "host" : "device";
}

StepPlanning parse_step_planning(std::string_view text, const char* argument) {
  if (text == "host") return StepPlanning::host;
  if (text == "device") return StepPlanning::device;
  throw Error(argument, "must be 'host' or 'device' (got '" + std::string(text) + "')");
}

void refuse_plan_on_device_planned_step() {
  throw Error("planning", "is 'device': run() reads the lengths, plan() is for host planning");
}

void refuse_lengths_on_host_planned_run() {
  throw Error("seq_lens", "must be null for a host-planned step: its lengths come from plan()");
}

void require_one_q_len(const DecodeProblem& shape) {
  require(!shape.has_query_start_loc(), "query_start_loc", [] {
    return "a step takes one q_len for every request (a mixed batch runs through an executor's "
           "plan and run)";
  });
}

DecodeProblem step_problem(const DecodeProblem& shape, std::span<const std::int32_t> seq_lens) {
  require_one_q_len(shape);
  const auto capacity = shape.seq_lens.size();
  const std::int32_t bound =
      capacity == 0 ? 0 : *std::max_element(shape.seq_lens.begin(), shape.seq_lens.end());
  require(seq_lens.size() <= capacity, "seq_lens", [&] {
    return "has " + std::to_string(seq_lens.size()) + " lengths, more than the step's batch " +
           "capacity " + std::to_string(capacity);
  });
  for (std::size_t b = 0; b < seq_lens.size(); ++b) {
    const std::int32_t len = seq_lens[b];
    require(len >= 0 && len <= bound && (len == 0 || len >= shape.q_len), "seq_lens", [&] {
      return "request " + std::to_string(b) + " has length " + std::to_string(len) +
             ": must be 0 or in [q_len " + std::to_string(shape.q_len) + ", the step's bound " +
             std::to_string(bound) + "]";
    });
  }
  DecodeProblem step = shape;
  std::fill(step.seq_lens.begin(), step.seq_lens.end(), 0);
  std::copy(seq_lens.begin(), seq_lens.end(), step.seq_lens.begin());
  return step;
}

}  // namespace leanattn
