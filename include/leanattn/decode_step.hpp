// DecodeStep: a decode step of fixed bounds whose plan is made anew for each step's lengths, the
// form a serving loop captures once in a CUDA graph and replays (docs/cuda-graphs.md). Every
// executor makes one (Executor::make_step); the Python module's leanattn.DecodeStep and the torch
// op's plan="device" are built on it.
//
//   shape: the step's heads, widths, types, layout, q_len and variant; its batch the capacity
//   (requests past a step's batch get length 0) and its longest request the bound.
//
//   auto step = executor->make_step(shape, {}, leanattn::StepPlanning::device);
//   step->run(seq_lens, tensors, stream);   // seq_lens [capacity] in executor->memory()
//
//   auto step = executor->make_step(shape, {}, leanattn::StepPlanning::host);
//   step->plan(lens, stream);               // each step, lens on the host (<= capacity)
//   step->run(nullptr, tensors, stream);    // the captured part
//
// A mixed step (prefill chunks beside decode rows, each step its own counts): a shape with a
// query_start_loc, whose last entry is the step's static bound of query tokens,
// max_query_tokens (q, out, lse are [max_query_tokens, q_heads, ...]; mixed_step_shape() makes
// one) and q_len the bound of a request's count. Each step passes its lengths and its
// query_start_loc; rows past the step's query_start_loc[-1] are not written.
//
//   step->run(seq_lens, query_start_loc, tensors, stream);  // device planning
//   step->plan(lens, query_start_loc, stream);              // host planning, then run(nullptr..)
//
// How an executor does it: the CUDA engine's DevicePlannedStep (a planner kernel before the
// decode kernel) and HostPlannedStep (the host's plan copied into fixed buffers); the CPU engine,
// whose memory is the host's, reads the lengths when run() is called and plans them then. Mixed
// steps: the CPU engine, both plannings; the CUDA engine (and its emulator) refuse a mixed shape
// by name when the step is made (require_one_q_len).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn {

// Where a step's plan is made: from lengths the host passes to plan() before each run, or from
// lengths in the executor's memory that run() reads (on a GPU: on the device, with nothing on
// the host in between).
enum class StepPlanning : std::uint8_t { host, device };

std::string_view step_planning_name(StepPlanning planning);  // "host", "device"
// Throws Error naming `argument` for anything but "host" or "device".
StepPlanning parse_step_planning(std::string_view text, const char* argument = "planning");

// Throws Error naming query_start_loc when `shape` has one, for steps that plan one q_len for
// every request (the CUDA engine's two steps and the emulator's: their fixed plan buffers and
// the device planner have no room for the counts); `who` names the step in the message.
void require_one_q_len(const DecodeProblem& shape, const char* who = "this step");

// `shape` (every request at the bound) made a mixed step's shape: a query_start_loc [capacity +
// 1] whose last entry is `max_query_tokens`, the requests filled in order up to q_len each.
// Throws Error naming max_query_tokens outside [1, capacity x q_len], query_start_loc when the
// shape has one already.
DecodeProblem mixed_step_shape(DecodeProblem shape, std::int32_t max_query_tokens);

// `shape` with `seq_lens` [<= capacity] as its lengths, requests past them at length 0 (and 0
// query tokens): the problem one step of a DecodeStep runs. Throws Error naming seq_lens when
// there are more lengths than the capacity (shape's batch) or a length is negative, above the
// bound (shape's longest request) or in [1, the request's query tokens). A mixed shape takes
// `query_start_loc` [seq_lens.size() + 1] (Error naming query_start_loc unless it starts at 0,
// is non-decreasing, each count <= q_len and its last <= shape.total_queries()); a shape
// without one takes none (empty: Error naming query_start_loc otherwise).
DecodeProblem step_problem(const DecodeProblem& shape, std::span<const std::int32_t> seq_lens,
                           std::span<const std::int32_t> query_start_loc = {});

// Throws Error naming query_start_loc unless `given` says whether `shape` has one: a mixed
// step's run() and plan() take one each step, a step of one q_len none.
void require_step_query_start_loc(const DecodeProblem& shape, bool given);

// The executors' refusals of a step's misuse, one wording: plan() on a device-planned step
// (Error naming planning), lengths given to a host-planned step's run() (Error naming
// `argument`: seq_lens, or query_start_loc).
[[noreturn]] void refuse_plan_on_device_planned_step();
[[noreturn]] void refuse_lengths_on_host_planned_run(const char* argument = "seq_lens");

class DecodeStep {
 public:
  virtual ~DecodeStep() = default;

  virtual StepPlanning planning() const = 0;
  virtual std::int32_t workers() const = 0;      // persistent workers each step's plan is for
  virtual std::int32_t tile_tokens() const = 0;  // the lean tile of each step's plan

  // Host planning: plans the next run() for `seq_lens` (host int32 [<= capacity]) and, for a
  // mixed shape, `query_start_loc` (host int32 [seq_lens.size() + 1]; empty otherwise), refused
  // by name as step_problem() refuses them; device executors copy the plan asynchronously on
  // `stream`. Device planning: Error naming planning (run() takes the lengths).
  virtual void plan(std::span<const std::int32_t> seq_lens,
                    std::span<const std::int32_t> query_start_loc, void* stream) = 0;
  void plan(std::span<const std::int32_t> seq_lens, void* stream) { plan(seq_lens, {}, stream); }

  // Runs one step on tensors laid out for the shape (validated against it). Device planning:
  // seq_lens [capacity] int32 in the executor's memory, read when the step runs (a GPU's planner
  // refuses bad lengths on the device and check() reports them; the CPU reads them here and
  // throws at once). Host planning: seq_lens null (Error naming seq_lens otherwise); the plan of
  // the last plan(), none before the first (nothing is written). Device executors launch on
  // `stream` (capturable), host executors return when the output is written. query_start_loc:
  // a mixed shape's device planning, [capacity + 1] int32 in the executor's memory beside
  // seq_lens; null otherwise (Error naming query_start_loc when it does not match the shape).
  virtual void run(const std::int32_t* seq_lens, const std::int32_t* query_start_loc,
                   const DecodeTensors& tensors, void* stream) = 0;
  void run(const std::int32_t* seq_lens, const DecodeTensors& tensors, void* stream) {
    run(seq_lens, nullptr, tensors, stream);
  }

  // Device planning on a device executor: waits for `stream` and throws Error naming seq_lens
  // when a run since the last check was refused (then clears it). Otherwise nothing to report.
  virtual void check(void* stream) = 0;
};

}  // namespace leanattn
