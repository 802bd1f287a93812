// The host-planned step (HostPlannedStep: the plan made on the host each step and copied into
// fixed buffers) captured once in a real CUDA graph and replayed with 20 length sets, each
// output bitwise equal to Engine::run of the host plan and accurate against the fp64 reference;
// eight steps queued with no host wait (the staging buffers reused under the GPU's work), each
// equal to Engine::run; bad lengths refused by name on the host; plan() refused during a
// capture. Then the cost
// sweep of the device check (issue 33, deliverable 4): for batch 1-256 the replay of a
// device-planned step (planner + decode) against the host-planned one (decode alone, the copy
// before it) on the same lengths, whose difference is the planner's time. Skips when no CUDA
// device is present.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
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

TEST(CudaGraph, HostPlannedStepReplaysWithNewLengths) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
  Engine engine;
  const DecodeProblem shape =
      harness::test_problem({4000, 4000, 4000, 4000}, 32, 8, 128, DType::bf16);
  if (!engine.can_run(shape)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  harness::HostCase c = harness::make_case(shape, 22);
  DeviceCase d(c);
  HostPlannedStep step(engine, c.problem, {.tile_tokens = 64});
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);  // blocking: after the harness's memsets
  cudaGraphExec_t exec = captured(stream, [&] {
    const std::vector<std::int32_t> lens = {1, 1};
    EXPECT_THROW(step.plan(lens, stream), Error);  // the host's work, not the graph's
    step.run(d.tensors(), stream);
  });
  DeviceBuffer host_ws(1 << 24);
  std::mt19937 rng(5);
  for (int replay = 0; replay < 20; ++replay) {
    std::vector<std::int32_t> now(4);
    for (std::int32_t& x : now) x = rng() % 4 == 0 ? 0 : static_cast<std::int32_t>(rng() % 4001);
    if (replay == 0) now = {4000, 0, 0, 0};
    if (replay == 1) now = {0, 0, 0, 0};
    if (replay == 2) now = {17, 3999};  // fewer lengths than the capacity: the rest 0
    d.poison();
    step.plan(now, stream);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    harness::poison_outputs(c);
    d.download(c);
    const std::vector<std::byte> graph_out = c.out;
    DecodeProblem p = c.problem;
    std::fill(p.seq_lens.begin(), p.seq_lens.end(), 0);
    std::copy(now.begin(), now.end(), p.seq_lens.begin());
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
  // Eight steps queued back to back with no host wait between them (the staging buffers are
  // rewritten while the GPU still works through earlier steps), each output copied aside on the
  // stream, then each compared with Engine::run of its lengths.
  const std::size_t out_bytes = c.out.size();
  DeviceBuffer history(8 * out_bytes);
  std::vector<std::vector<std::int32_t>> queued;
  for (int i = 0; i < 8; ++i) {
    std::vector<std::int32_t> now(4);
    for (std::int32_t& x : now) x = 1 + static_cast<std::int32_t>(rng() % 4000);
    queued.push_back(now);
    step.plan(now, stream);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(history.as<std::byte>() + i * out_bytes, d.tensors().out, out_bytes,
                              cudaMemcpyDeviceToDevice, stream),
              cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (int i = 0; i < 8; ++i) {
    std::vector<std::byte> got(out_bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), history.as<std::byte>() + i * out_bytes, out_bytes,
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    DecodeProblem p = c.problem;
    p.seq_lens = queued[static_cast<std::size_t>(i)];
    const Plan plan =
        make_plan(p, {step.workers()}, {.order = LineOrder::head_major, .tile_tokens = 64});
    harness::HostCase host = c;
    host.problem = p;
    d.poison();
    engine.run(p, plan, d.tensors(), host_ws.data(), stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    d.download(host);
    EXPECT_TRUE(got == host.out) << "queued step " << i;
  }
  // Cost: 50 steps of plan() + replay against 50 of make_plan + Engine::run (upload + decode),
  // the same lengths, a new plan each step; printed for the device check's log.
  std::vector<std::int32_t> timed = {3000, 1200, 4000, 17};
  const double graph_us = stream_us_per_call(stream, 50, [&](int i) {
    timed[0] = 3000 - i;
    step.plan(timed, stream);
    EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  });
  DecodeProblem p = c.problem;
  const double run_us = stream_us_per_call(stream, 50, [&](int i) {
    timed[0] = 3000 - i;
    p.seq_lens = timed;
    const Plan plan =
        make_plan(p, {step.workers()}, {.order = LineOrder::head_major, .tile_tokens = 64});
    engine.run(p, plan, d.tensors(), host_ws.data(), stream);
  });
  std::printf(
      "[host-plan] 32/8 d128 bf16 batch 4 (8.2k keys), %d workers: plan() + graph replay "
      "%.1f us, make_plan + Engine::run (upload + decode) %.1f us per step\n",
      step.workers(), graph_us, run_us);
  for (const std::vector<std::int32_t>& bad :
       std::vector<std::vector<std::int32_t>>{{10, 4001}, {-1}, {1, 2, 3, 4, 5}}) {
    EXPECT_THROW(step.plan(bad, stream), Error);
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Batch 1-256, 32/8 heads d128 bf16, 512 keys per request (a small decode, so that the
// planner's share shows): per step, the device-planned graph (planner + decode) and the
// host-planned graph (decode alone; plan() and its copy outside the timed replays, the plan
// the same). Lines for the device check's log.
TEST(CudaGraph, PlannerCostAgainstBatch) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
  Engine engine;
  if (!engine.can_run(harness::test_problem({512}, 32, 8, 128, DType::bf16))) {
    GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (std::int32_t batch : {1, 4, 16, 64, 256}) {
    const std::vector<std::int32_t> lens(static_cast<std::size_t>(batch), 512);
    const DecodeProblem shape = harness::test_problem(lens, 32, 8, 128, DType::bf16);
    const std::size_t kv = static_cast<std::size_t>(batch) * 512 * 8 * 128 * 2;
    DeviceBuffer q(static_cast<std::size_t>(batch) * 32 * 128 * 2), k(kv), v(kv),
        out(static_cast<std::size_t>(batch) * 32 * 128 * 2),
        lse(static_cast<std::size_t>(batch) * 32 * 4), d_lens(lens.size() * 4);
    for (DeviceBuffer* b : {&q, &k, &v})
      ASSERT_EQ(cudaMemset(b->data(), 0, b->size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_lens.data(), lens.data(), lens.size() * 4, cudaMemcpyHostToDevice),
              cudaSuccess);
    const DecodeTensors t =
        dense_tensors(shape, q.data(), k.data(), v.data(), nullptr, out.data(), lse.as<float>());
    DevicePlannedStep on_device(engine, shape);
    HostPlannedStep on_host(engine, shape);
    on_host.plan(lens, stream);
    cudaGraphExec_t device_exec =
        captured(stream, [&] { on_device.run(d_lens.as<std::int32_t>(), t, stream); });
    cudaGraphExec_t host_exec = captured(stream, [&] { on_host.run(t, stream); });
    // Per replay: 100 replays after 10 to warm up.
    auto replay_us = [&](cudaGraphExec_t exec) {
      for (int i = 0; i < 10; ++i) EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      return stream_us_per_call(
          stream, 100, [&](int) { EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess); });
    };
    const double device_us = replay_us(device_exec), host_us = replay_us(host_exec);
    on_device.check(stream);
    std::printf(
        "[planner-cost] batch %d, %d workers, 32/8 d128 bf16, 512 keys each: device-planned "
        "%.2f us, host-planned (decode alone) %.2f us per step: planner %.2f us (%.0f%%)\n",
        batch, on_device.workers(), device_us, host_us, device_us - host_us,
        100.0 * (device_us - host_us) / device_us);
    EXPECT_EQ(cudaGraphExecDestroy(device_exec), cudaSuccess);
    EXPECT_EQ(cudaGraphExecDestroy(host_exec), cudaSuccess);
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace leanattn::cuda
