// step_problem(), the StepPlanning names and the misuse refusals (see leanattn/decode_step.hpp):
// the rules every executor's DecodeStep applies, in one place.
#include "leanattn/decode_step.hpp"

#include <algorithm>
#include <string>
#include <vector>

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

void refuse_lengths_on_host_planned_run(const char* argument) {
  throw Error(argument, "must be null for a host-planned step: its lengths come from plan()");
}

void require_one_q_len(const DecodeProblem& shape, const char* who) {
  require(!shape.has_query_start_loc(), "query_start_loc", [&] {
    return std::string(who) +
           " plans one q_len for every request (a mixed step runs on the CPU engine; a mixed "
           "batch runs through any executor's plan and run)";
  });
}

DecodeProblem mixed_step_shape(DecodeProblem shape, std::int32_t max_query_tokens) {
  require(!shape.has_query_start_loc(), "query_start_loc",
          [] { return "must be empty in the shape mixed_step_shape() completes"; });
  const std::int64_t most = std::int64_t{shape.batch()} * shape.q_len;
  require(max_query_tokens >= 1 && max_query_tokens <= most, "max_query_tokens", [&] {
    return "must be in [1, batch x q_len = " + std::to_string(most) + "] (got " +
           std::to_string(max_query_tokens) + ")";
  });
  shape.query_start_loc.assign(shape.seq_lens.size() + 1, 0);
  for (std::size_t b = 0; b < shape.seq_lens.size(); ++b) {
    shape.query_start_loc[b + 1] = static_cast<std::int32_t>(std::min<std::int64_t>(
        max_query_tokens, std::int64_t{shape.query_start_loc[b]} + shape.q_len));
  }
  return shape;
}

void require_step_query_start_loc(const DecodeProblem& shape, bool given) {
  require(given == shape.has_query_start_loc(), "query_start_loc", [&] {
    return shape.has_query_start_loc()
               ? std::string("must be given each step of a mixed step ([capacity + 1] int32)")
               : std::string(
                     "must be empty: the step's shape has one q_len for every request "
                     "(make the step from a mixed shape: mixed_step_shape())");
  });
}

namespace {

// A mixed step's query_start_loc against its shape (see step_problem); returns it padded to
// [capacity + 1] with its last entry (requests past the step's: 0 query tokens).
std::vector<std::int32_t> step_query_start_loc(const DecodeProblem& shape, std::size_t requests,
                                               std::span<const std::int32_t> loc) {
  require(loc.size() == requests + 1, "query_start_loc", [&] {
    return "must have one more entry than seq_lens: " + std::to_string(requests + 1) + " (got " +
           std::to_string(loc.size()) + ")";
  });
  require(loc[0] == 0, "query_start_loc",
          [&] { return "must start at 0 (got " + std::to_string(loc[0]) + ")"; });
  for (std::size_t b = 0; b < requests; ++b) {
    const std::int64_t n = std::int64_t{loc[b + 1]} - loc[b];
    require(n >= 0 && n <= shape.q_len, "query_start_loc", [&] {
      return "request " + std::to_string(b) + " has " + std::to_string(n) +
             " query tokens: must be non-decreasing with each count in [0, q_len " +
             std::to_string(shape.q_len) + "]";
    });
  }
  const std::int64_t bound = shape.total_queries();  // max_query_tokens
  require(loc.back() <= bound, "query_start_loc", [&] {
    return "ends at " + std::to_string(loc.back()) + " query tokens, past the step's " +
           "max_query_tokens " + std::to_string(bound);
  });
  std::vector<std::int32_t> full(shape.seq_lens.size() + 1, loc.back());
  std::copy(loc.begin(), loc.end(), full.begin());
  return full;
}

}  // namespace

DecodeProblem step_problem(const DecodeProblem& shape, std::span<const std::int32_t> seq_lens,
                           std::span<const std::int32_t> query_start_loc) {
  require_step_query_start_loc(shape, !query_start_loc.empty());
  const auto capacity = shape.seq_lens.size();
  const std::int32_t bound =
      capacity == 0 ? 0 : *std::max_element(shape.seq_lens.begin(), shape.seq_lens.end());
  require(seq_lens.size() <= capacity, "seq_lens", [&] {
    return "has " + std::to_string(seq_lens.size()) + " lengths, more than the step's batch " +
           "capacity " + std::to_string(capacity);
  });
  DecodeProblem step = shape;
  if (shape.has_query_start_loc()) {
    step.query_start_loc = step_query_start_loc(shape, seq_lens.size(), query_start_loc);
  }
  for (std::size_t b = 0; b < seq_lens.size(); ++b) {
    const std::int32_t len = seq_lens[b];
    const std::int32_t count = step.query_len(static_cast<std::int32_t>(b));
    require(len >= 0 && len <= bound && (len == 0 || len >= count), "seq_lens", [&] {
      return "request " + std::to_string(b) + " has length " + std::to_string(len) +
             ": must be 0 or in [" +
             (shape.has_query_start_loc() ? "its query tokens " : "q_len ") +
             std::to_string(count) + ", the step's bound " + std::to_string(bound) + "]";
    });
  }
  std::fill(step.seq_lens.begin(), step.seq_lens.end(), 0);
  std::copy(seq_lens.begin(), seq_lens.end(), step.seq_lens.begin());
  return step;
}

}  // namespace leanattn
