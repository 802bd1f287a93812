// leanattn_planner_cost: the device planner's work for batch 1-256 at GPU-like worker counts
// (issue 33, deliverable 4). The planner runs on the emulator (its segment and slot counts
// checked against the host planner's); its serial depth is counted in closed form from the
// kernel's loops (plan_kernel.cuh), their bounds taken from that plan: per phase, the steps of the
// busiest of its 256 threads (T = 256, P = batch x kv_heads pairs, W workers):
//   lengths  ceil(B / T)                         scan of tiles   2 ceil(B / T) + 8 (shuffles)
//   searches ceil(W / T) x 3 ceil(log2(P + 1))    3 worker scans  3 (2 ceil(W / T) + 8)
//   pieces   ceil(W / T) x (2 ceil(log2(P + 1)) + the most segments of one worker)
// 15 barriers. Beside it, the host's cost of the same step, measured: plan_step +
// write_plan_region, what a host-planned step does each step. GPU times: the device check
// (tests/cuda/planned_step_test.cpp, [planner-cost] lines).
//   leanattn_planner_cost [--repeats N] [--kv-heads H]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "emulator/emulated_capture.hpp"
#include "leanattn/core/ceil_div.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"
#include "leanattn/heuristics.hpp"
#include "leanattn/planner.hpp"

namespace {

constexpr std::int64_t kThreads = 256;

std::int64_t ceil_log2(std::int64_t x) {  // ceil(log2(x)), x >= 1
  std::int64_t n = 0;
  while ((std::int64_t{1} << n) < x) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace leanattn;
  int repeats = 5;
  std::int32_t kv_heads = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--kv-heads") == 0) kv_heads = std::max(1, std::atoi(argv[i + 1]));
  }
  const std::int32_t tile = default_tile_tokens(128, 128);
  std::printf(
      "# device planner: kv_heads %d, d128 bf16, lengths 1-32768 (seeded), tile %d; "
      "serial steps counted in closed form from the kernel's loops (bounds from the plan the "
      "emulator wrote); "
      "host plan: median of %d runs\n",
      kv_heads, tile, repeats);
  std::printf(
      "batch,workers,segments,max_segments_per_worker,steps_scans,steps_other,"
      "steps_total,host_plan_ns\n");
  std::mt19937 rng(33);
  for (std::int32_t batch : {1, 4, 16, 64, 256}) {
    std::vector<std::int32_t> lens(static_cast<std::size_t>(batch));
    for (std::int32_t& x : lens) x = 1 + static_cast<std::int32_t>(rng() % 32768);
    DecodeProblem shape;
    shape.q_heads = 4 * kv_heads;
    shape.kv_heads = kv_heads;
    shape.head_dim = 128;
    shape.q_dtype = shape.kv_dtype = DType::bf16;
    shape.seq_lens.assign(lens.size(), 32768);
    shape.capacity = 32768;
    for (std::int32_t workers : {132, 264, 528}) {
      emulator::EmulatedCapturedStep step(shape, workers, tile);
      std::copy(lens.begin(), lens.end(), step.seq_lens().begin());
      step.plan_only();
      const emulator::DevicePlanView v = step.plan();
      DecodeProblem now = shape;
      now.seq_lens = lens;
      const Plan host =
          make_plan(now, Hardware{workers}, {.order = LineOrder::head_major, .tile_tokens = tile});
      if (v.segments.size() != host.segments.size() || v.num_slots != host.num_slots) {
        throw Error("plan", "the device planner's plan differs from the host's");
      }
      std::int64_t most = 0;
      for (std::size_t w = 0; w + 1 < v.worker_offsets.size(); ++w) {
        most = std::max<std::int64_t>(most, v.worker_offsets[w + 1] - v.worker_offsets[w]);
      }
      const std::int64_t b = ceil_div<std::int64_t>(batch, kThreads);
      const std::int64_t w = ceil_div<std::int64_t>(workers, kThreads);
      const std::int64_t search = ceil_log2(static_cast<std::int64_t>(batch) * kv_heads + 1);
      // A scan: each thread's chunk twice, 5 shuffle steps in its warp, 3 across the 8 warps.
      const std::int64_t scans = 2 * b + 8 + 3 * (2 * w + 8);
      const std::int64_t other = b + w * 3 * search + w * (2 * search + most);
      std::vector<double> ns;
      for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        step.plan_on_host(lens);
        ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
                         .count());
      }
      std::sort(ns.begin(), ns.end());
      std::printf("%d,%d,%zu,%lld,%lld,%lld,%lld,%.0f\n", batch, workers, v.segments.size(),
                  static_cast<long long>(most), static_cast<long long>(scans),
                  static_cast<long long>(other), static_cast<long long>(scans + other),
                  ns[ns.size() / 2]);
    }
  }
  return 0;
}
