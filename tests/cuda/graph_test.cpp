// The CUDA engine under CUDA-graph capture: after prepare(), a run is captured once and replayed
// many times with new query values written between replays; every replay must match the fp64
// reference, which needs the arrival counters to be back at zero after each launch (no memset
// node is captured). A run of an unprepared plan during capture is refused with a clear Error.
// A DevicePlannedStep (the plan made on the GPU) is captured once and replayed with 20 length
// sets written on the device, each output bitwise equal to Engine::run of the host plan for the
// same lengths, workers and tile; a length past the bound plans nothing and check() names it.
// The decode kernel as the planner's programmatic dependent gives the outputs of plain launches.
// Skips when no CUDA device is present.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <vector>

#include "cuda/device/device_buffer.hpp"
#include "cuda_harness/device_case.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"
#include "stream_helpers.hpp"

namespace leanattn::cuda {
namespace {

TEST(CudaGraph, CapturedRunReplaysCorrectlyWithoutResets) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
  Engine engine;
  const DecodeProblem p = harness::test_problem({20000, 3000, 0, 517}, 32, 8, 128, DType::bf16);
  if (!engine.can_run(p)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  harness::HostCase c = harness::make_case(p, 12);
  DeviceCase d(c);
  const Plan plan = make_plan(c.problem, {4 * engine.device().sm_count},
                              {.order = LineOrder::head_major, .tile_tokens = 32});
  ASSERT_FALSE(plan.reductions.empty());
  DeviceBuffer ws(static_cast<std::size_t>(engine.workspace_bytes(plan)));

  cudaStream_t stream = nullptr;
  // A blocking stream: the harness's poison and uploads (plain cudaMemset / cudaMemcpy on the
  // legacy stream) are ordered before the work on it.
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  engine.prepare(c.problem, plan, ws.data(), stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  // An unprepared plan cannot be uploaded inside a capture.
  const Plan other = make_plan(c.problem, {3}, {.order = LineOrder::head_major});
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_THROW(engine.run(c.problem, other, d.tensors(), ws.data(), stream), Error);
  engine.run(c.problem, plan, d.tensors(), ws.data(), stream);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

  for (int replay = 0; replay < 8; ++replay) {
    harness::fill_normal(c.q.data(), p.q_dtype,
                         static_cast<std::int64_t>(c.q.size() / dtype_size(p.q_dtype)),
                         static_cast<std::uint64_t>(100 + replay));
    ASSERT_EQ(cudaMemcpy(const_cast<void*>(d.tensors().q), c.q.data(), c.q.size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    d.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    harness::poison_outputs(c);
    d.download(c);
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const harness::Accuracy a = harness::check_accuracy(c, ref, true);
    ASSERT_TRUE(a.ok()) << "replay " << replay << ": err " << a.max_abs_err << " > tol "
                        << a.tolerance << " (" << a.first_problem << ")";
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(CudaGraph, DevicePlannedStepReplaysWithNewLengths) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
  Engine engine;
  const DecodeProblem shape =
      harness::test_problem({4000, 4000, 4000, 4000}, 32, 8, 128, DType::bf16);
  if (!engine.can_run(shape)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  harness::HostCase c = harness::make_case(shape, 21);
  DeviceCase d(c);
  DevicePlannedStep step(engine, c.problem, {.tile_tokens = 64});
  DeviceBuffer lens(4 * sizeof(std::int32_t));
  cudaStream_t stream = nullptr;
  // A blocking stream: the harness's poison and uploads (plain cudaMemset / cudaMemcpy on the
  // legacy stream) are ordered before the work on it.
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraphExec_t exec =
      captured(stream, [&] { step.run(lens.as<std::int32_t>(), d.tensors(), stream); });

  DeviceBuffer host_ws(1 << 24);  // Engine::run's workspace for the host plans (one, reused)
  std::mt19937 rng(4);
  for (int replay = 0; replay < 20; ++replay) {
    std::vector<std::int32_t> now(4);
    for (std::int32_t& x : now) x = rng() % 4 == 0 ? 0 : static_cast<std::int32_t>(rng() % 4001);
    if (replay == 0) now = {4000, 0, 0, 0};  // one long request
    if (replay == 1) now = {0, 0, 0, 0};
    ASSERT_EQ(cudaMemcpy(lens.data(), now.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
    d.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    step.check(stream);
    harness::poison_outputs(c);
    d.download(c);
    const std::vector<std::byte> graph_out = c.out;
    // The host plan for the same lengths, workers and tile, through Engine::run.
    DecodeProblem p = c.problem;
    p.seq_lens = now;
    const Plan plan =
        make_plan(p, {step.workers()}, {.order = LineOrder::head_major, .tile_tokens = 64});
    harness::HostCase host = c;
    host.problem = p;
    d.poison();
    ASSERT_LE(engine.workspace_bytes(plan), static_cast<std::int64_t>(host_ws.size()));
    engine.run(p, plan, d.tensors(), host_ws.data(), stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    d.download(host);
    EXPECT_TRUE(graph_out == host.out) << "replay " << replay;
    const auto ref = reference::naive_attention(host.problem, host.tensors());
    const harness::Accuracy a = harness::check_accuracy(host, ref, true);
    EXPECT_TRUE(a.ok()) << "replay " << replay << ": err " << a.max_abs_err;
  }
  // Cost: 50 replays of the graph (planner + decode) against 50 steps planned on the host
  // (make_plan, upload, decode), the same lengths; printed for the device check's log.
  const std::vector<std::int32_t> fixed = {3000, 1200, 4000, 17};
  ASSERT_EQ(cudaMemcpy(lens.data(), fixed.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  DecodeProblem timed = c.problem;
  timed.seq_lens = fixed;
  const double graph_us = stream_us_per_call(
      stream, 50, [&](int) { EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess); });
  const double host_us = stream_us_per_call(stream, 50, [&](int i) {
    timed.seq_lens[0] = 3000 - i;  // a new plan every step, as in serving
    const Plan plan =
        make_plan(timed, {step.workers()}, {.order = LineOrder::head_major, .tile_tokens = 64});
    engine.run(timed, plan, d.tensors(), host_ws.data(), stream);
  });
  std::printf(
      "[device-plan] 32/8 d128 bf16 batch 4 (8.2k keys), %d workers: graph replay "
      "(planner + decode) %.1f us, host plan + upload + decode %.1f us per step\n",
      step.workers(), graph_us, host_us);
  // A length past the bound: nothing is planned, check() names the request.
  const std::vector<std::int32_t> bad = {10, 4001, 0, 0};
  ASSERT_EQ(cudaMemcpy(lens.data(), bad.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  EXPECT_THROW(step.check(stream), Error);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// The decode kernel launched as the device planner's programmatic dependent (sm_90 and later:
// its CTAs start while the planner runs and wait for its plan) against plain back-to-back
// launches: one capture each, the same 8 length sets, outputs bitwise equal (and accurate); 50
// replays of each timed for the device check's log. Before sm_90 both launches are plain.
TEST(CudaGraph, DependentLaunchAgainstPlainLaunches) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
  const DecodeProblem shape =
      harness::test_problem({4000, 4000, 4000, 4000}, 32, 8, 128, DType::bf16);
  if (!Engine().can_run(shape)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  harness::HostCase c = harness::make_case(shape, 23);
  const DecodeProblem bound = c.problem;  // the steps' shape (c.problem takes each set's lengths)
  DeviceCase d(c);
  DeviceBuffer lens(4 * sizeof(std::int32_t));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);  // blocking: ordered after the harness's
  std::vector<std::vector<std::int32_t>> sets = {{4000, 0, 0, 0}, {0, 0, 0, 0}};
  std::mt19937 rng(6);
  while (sets.size() < 8) {
    std::vector<std::int32_t> now(4);
    for (std::int32_t& x : now) x = rng() % 4 == 0 ? 0 : static_cast<std::int32_t>(rng() % 4001);
    sets.push_back(now);
  }
  std::vector<std::byte> outputs[2][8];
  double us[2] = {0, 0};
  for (int dependent = 0; dependent < 2; ++dependent) {
    Engine engine({.dependent_launch = dependent == 1});
    DevicePlannedStep step(engine, bound, {.tile_tokens = 64});
    // The builds the device check makes have sm_90 code: the dependent launch is taken there.
    if (dependent == 1 && engine.device().cc_major >= 9) {
      EXPECT_TRUE(step.dependent_launch());
    }
    if (dependent == 0) {
      EXPECT_FALSE(step.dependent_launch());
    }
    cudaGraphExec_t exec =
        captured(stream, [&] { step.run(lens.as<std::int32_t>(), d.tensors(), stream); });
    for (std::size_t i = 0; i < sets.size(); ++i) {
      ASSERT_EQ(cudaMemcpy(lens.data(), sets[i].data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
      d.poison();
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      step.check(stream);
      harness::poison_outputs(c);
      d.download(c);
      outputs[dependent][i] = c.out;
      c.problem.seq_lens = sets[i];
      const auto ref = reference::naive_attention(c.problem, c.tensors());
      EXPECT_TRUE(harness::check_accuracy(c, ref, true).ok())
          << (dependent ? "dependent" : "plain") << " launch, set " << i;
    }
    us[dependent] = stream_us_per_call(
        stream, 50, [&](int) { EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess); });
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  }
  for (std::size_t i = 0; i < sets.size(); ++i) {
    EXPECT_TRUE(outputs[0][i] == outputs[1][i]) << "set " << i << ": dependent != plain launch";
  }
  std::printf(
      "[device-plan] dependent launch (planner -> decode, griddepcontrol): %.1f us per "
      "replay, plain launches %.1f us (32/8 d128 bf16, last set's lengths)\n",
      us[1], us[0]);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace leanattn::cuda
