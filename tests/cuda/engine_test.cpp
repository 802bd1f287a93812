// The CUDA engine on a GPU against the fp64 reference (harness/accuracy.hpp's policy): every
// compiled configuration (dtype x K/V width x head_dim x warp rows; the 8-bit ones on fp8 e4m3 /
// e5m2 and int8 caches with per-tensor, per-KV-head and per-token-head scales) with GQA groups
// of one and several passes; the lean, split and head strategies (the same kernel, different
// plans); worker counts from 1 to many times the resident CTAs; ragged and empty lengths; paged
// caches with shuffled block tables and pages of 1 to 256 tokens; the attention variants (several
// query tokens, per-request counts, windows, soft-caps, sinks, ALiBi); strided outputs;
// bitwise-repeatable runs; one workspace shared by different plans (the counters reset themselves);
// bad input rejected. Every test skips when no CUDA device is present.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "cuda/device/device_buffer.hpp"
#include "cuda/kernel_registry.hpp"
#include "cuda_harness/device_case.hpp"
#include "failure_kinds.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/random_problem.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::cuda {
namespace {

class CudaEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
    engine_ = std::make_unique<Engine>();
  }

  Engine& engine() { return *engine_; }

  // A plan for `workers` CTAs (0: the engine's occupancy).
  Plan plan_for(const DecodeProblem& p, Strategy s, std::int32_t workers, std::int32_t tile = 0) {
    PlanOptions o{.strategy = s, .tile_tokens = tile};
    if (workers == 0) return engine().plan(p, o);
    if (s == Strategy::lean) o.order = LineOrder::head_major;
    return make_plan(p, {workers}, o);
  }

  // Runs every strategy for each worker count on c and checks against the reference. One line
  // per configuration on stdout ("[config] ... ok" or "FAIL" with what failed: rows never
  // written, NaN, numeric mismatch, for split and direct pairs), EXPECT so that every
  // configuration runs, a CUDA error reported as that configuration's failure.
  void check_all(harness::HostCase& c, std::initializer_list<std::int32_t> workers,
                 const std::string& what, std::int32_t tile = 0) {
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    DeviceCase d(c);
    for (std::int32_t w : workers) {
      for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
        const Plan plan = plan_for(c.problem, s, w, tile);
        const std::string config = what + " " + std::string(strategy_name(s)) + " workers " +
                                   std::to_string(plan.workers) + " tile " +
                                   std::to_string(plan.tile_tokens) + " (" +
                                   std::to_string(plan.reductions.size()) + " split pairs)";
        try {
          d.poison();
          engine().run(c.problem, plan, d.tensors(), nullptr);
          harness::poison_outputs(c);
          d.download(c);
        } catch (const std::exception& e) {
          std::printf("[config] %s: FAIL cuda error: %s\n", config.c_str(), e.what());
          ADD_FAILURE() << config << ": " << e.what();
          continue;
        }
        const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
        const testing::FailureKinds kinds =
            a.ok() ? testing::FailureKinds{} : testing::classify_rows(c, plan, ref, a.tolerance);
        std::printf("[config] %s: %s%s\n", config.c_str(), a.ok() ? "ok" : "FAIL ",
                    kinds.summary().c_str());
        EXPECT_TRUE(a.ok()) << config << ": err " << a.max_abs_err << " > tol " << a.tolerance
                            << ", lse err " << a.max_lse_err << ", mismatches " << a.mismatches
                            << " (" << a.first_problem << "); " << kinds.summary();
      }
    }
  }

  std::int32_t sms() { return engine().device().sm_count; }

  // False (and the test should skip) when the build lacks this configuration (builds can be
  // trimmed with LEANATTN_CUDA_HEAD_DIMS / LEANATTN_CUDA_DTYPES).
  static bool compiled(DType dtype, std::int32_t head_dim) {
    for (const KernelHandle& k : compiled_kernels()) {
      if (k.dtype == dtype && k.kv_bits == 16 && k.head_dim == head_dim) return true;
    }
    return false;
  }

  std::unique_ptr<Engine> engine_;
};

TEST_F(CudaEngineTest, EveryConfigurationAgainstTheReference) {
  const DType kv8[] = {DType::fp8_e4m3, DType::fp8_e5m2, DType::int8};
  const KvScales scales[] = {KvScales::per_tensor, KvScales::per_kv_head, KvScales::per_token_head};
  for (const KernelHandle& k : compiled_kernels()) {
    const std::vector<std::int32_t> groups = k.warps_m == 1 ? std::vector<std::int32_t>{1, 4, 16}
                                                            : std::vector<std::int32_t>{24, 64, 80};
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const std::int32_t group = groups[g];
      DecodeProblem p = harness::test_problem({1000, 0, 1, 127, 128, 129, 3000, 17}, 2 * group, 2,
                                              k.head_dim, k.dtype);
      p.head_dim_v = k.head_dim_v;  // DeepSeek's widths: V from K's rows where k.v_from_k
      if (k.kv_bits == 8) {         // each format once, each scale granularity once
        p.kv_dtype = kv8[g % 3];
        p.kv_scales = scales[(g + static_cast<std::size_t>(k.head_dim / 64)) % 3];
      }
      EXPECT_EQ(find_kernel(p, engine().device().smem_per_block)->name, k.name);
      harness::HostCase c =
          harness::make_case(p, static_cast<std::uint64_t>(group * 1000 + k.head_dim), k.v_from_k);
      check_all(c, {0, 1, 7},
                k.name + " " + std::string(dtype_name(p.kv_dtype)) + " " +
                    std::string(kv_scales_name(p.kv_scales)) + " group " + std::to_string(group));
    }
  }
}

// The attention variants on every configuration: q_len up to 8 packed beside the group (one and
// several passes of rows), causal and not, windows shorter and longer than the requests with an
// edge on a tile edge (request 129, q_len 2, window 15: first planned key 112 = 7 x 16), soft-caps,
// sinks far above every score, ALiBi, and combinations.
TEST_F(CudaEngineTest, VariantsOnEveryConfiguration) {
  struct Case {
    const char* name;
    std::int32_t q_len;
    AttentionVariant variant;
    float sink_value;  // > 0: every sink set to this
  };
  const Case cases[] = {
      {"q_len 4 causal", 4, {}, 0.0f},
      {"q_len 3 non-causal alibi", 3, {.causal = false, .alibi = true}, 0.0f},
      {"q_len 2 window 15 softcap 30", 2, {.window_left = 15, .softcap = 30.0f}, 0.0f},
      {"window 127 sinks 60", 1, {.window_left = 127, .sinks = true}, 60.0f},
      {"q_len 8 everything",
       8,
       {.window_left = 100000, .softcap = 1.0f, .sinks = true, .alibi = true},
       0.0f}};
  for (const KernelHandle& k : compiled_kernels()) {
    for (const Case& cs : cases) {
      const std::int32_t group = k.warps_m == 1 ? std::max(1, 16 / cs.q_len) : 72 / cs.q_len;
      DecodeProblem p =
          harness::test_problem({1000, 0, 8, 127, 129, 3000}, 2 * group, 2, k.head_dim, k.dtype);
      p.head_dim_v = k.head_dim_v;
      p.q_len = cs.q_len;
      p.variant = cs.variant;
      if (k.kv_bits == 8) {  // the 8-bit configurations on an int8 cache, per-token-head scales
        p.kv_dtype = DType::int8;
        p.kv_scales = KvScales::per_token_head;
      }
      if (find_kernel(p, engine().device().smem_per_block) != &k) continue;
      harness::HostCase c =
          harness::make_case(p, static_cast<std::uint64_t>(cs.q_len) + 500, k.v_from_k);
      if (cs.sink_value > 0.0f) {
        for (float& x : c.sinks) x = cs.sink_value;
      }
      check_all(c, {0, 7}, k.name + " " + cs.name, 16);
    }
  }
}

TEST_F(CudaEngineTest, ManyMoreCtasThanSmsAndTinyTiles) {
  if (!compiled(DType::bf16, 128)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  DecodeProblem p = harness::test_problem({5000, 33, 0, 900, 2}, 32, 8, 128, DType::bf16);
  harness::HostCase c = harness::make_case(p, 21);
  check_all(c, {sms(), 4 * sms(), 16 * sms()}, "oversubscribed", 16);
  check_all(c, {3, 2 * sms()}, "tile 1", 1);
}

TEST_F(CudaEngineTest, PagedCachesWithShuffledBlockTables) {
  for (std::int32_t page : {1, 3, 16, 64, 256}) {
    std::vector<std::int32_t> lens = {6000};
    for (int i = 0; i < 15; ++i) lens.push_back(1 + i * 37);
    lens.push_back(0);
    for (DType t : {DType::f16, DType::bf16}) {
      if (!compiled(t, 128)) continue;
      DecodeProblem p = harness::test_problem(lens, 8, 1, 128, t);
      p.layout = KvLayout::paged;
      p.page_size = page;
      harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(page) + 77);
      check_all(c, {0, 5}, "page " + std::to_string(page) + " " + std::string(dtype_name(t)));
    }
  }
}

TEST_F(CudaEngineTest, AllEmptySequences) {
  if (!compiled(DType::f16, 64)) GTEST_SKIP() << "f16 head_dim 64 not in this build";
  DecodeProblem p = harness::test_problem({0, 0, 0}, 4, 2, 64, DType::f16);
  harness::HostCase c = harness::make_case(p, 3);
  check_all(c, {0, 1, 4}, "empty");
  for (float x : c.lse) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
}

// Per-request query counts (query_start_loc): 256 (x group 4: several passes of rows), 0, 1, 8, 2,
// 2 for an empty request (its rows see no key) and 33; causal and not, contiguous and paged.
TEST_F(CudaEngineTest, PerRequestQueryCounts) {
  if (!compiled(DType::bf16, 128)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  for (bool causal : {true, false}) {
    for (KvLayout layout : {KvLayout::contiguous, KvLayout::paged}) {
      DecodeProblem p = harness::test_problem({300, 0, 9, 17, 130, 0, 257}, 8, 2, 128, DType::bf16);
      p.query_start_loc = {0, 256, 256, 257, 265, 267, 269, 302};
      p.q_len = 256;
      p.variant.causal = causal;
      if (layout == KvLayout::paged) {
        p.layout = KvLayout::paged;
        p.page_size = 7;
      }
      harness::HostCase c = harness::make_case(p, causal ? 61 : 62);
      check_all(c, {0, 3, 8},
                std::string("query_start_loc ") + (causal ? "causal " : "non-causal ") +
                    (layout == KvLayout::paged ? "paged" : "contiguous"),
                16);
    }
  }
}

TEST_F(CudaEngineTest, RandomProblems) {
  std::mt19937_64 rng(4242);
  harness::RandomLimits lim;
  lim.max_len = 2000;
  lim.bias = false;          // the CUDA engine does not take a bias yet
  lim.block_kv = false;      // nor ggml's block formats
  lim.value_widths = false;  // nor K and V of different widths
  lim.max_workers = 1000;
  lim.max_group = 40;
  int checked = 0;
  for (int trial = 0; trial < 400 && checked < 120; ++trial) {
    harness::RandomCase rc = harness::random_case(rng, lim);
    rc.problem.q_dtype = trial % 2 ? DType::bf16 : DType::f16;
    if (!is_quantized(rc.problem.kv_dtype)) rc.problem.kv_dtype = rc.problem.q_dtype;
    rc.problem.head_dim = std::array<std::int32_t, 3>{64, 128, 256}[trial % 3];
    if (!engine().can_run(rc.problem)) continue;
    harness::HostCase c = harness::make_case(rc.problem, static_cast<std::uint64_t>(trial));
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    run_host_case(engine(), c, make_plan(c.problem, rc.hardware, rc.options));
    const harness::Accuracy a = harness::check_accuracy(c, ref, true);
    EXPECT_TRUE(a.ok()) << "trial " << trial << " err " << a.max_abs_err << " tol " << a.tolerance
                        << " (" << a.first_problem << ")";
    ++checked;
  }
}

TEST_F(CudaEngineTest, RepeatedRunsAreBitwiseIdentical) {
  if (!compiled(DType::bf16, 128)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  DecodeProblem p = harness::test_problem({30000, 17, 900}, 32, 8, 128, DType::bf16);
  harness::HostCase c = harness::make_case(p, 5);
  DeviceCase d(c);
  const Plan plan = plan_for(c.problem, Strategy::lean, 4 * sms(), 16);
  ASSERT_FALSE(plan.reductions.empty());
  engine().run(c.problem, plan, d.tensors(), nullptr);
  d.download(c);
  const auto first = c.out;
  const auto first_lse = c.lse;
  for (int i = 0; i < 20; ++i) {
    d.poison();
    engine().run(c.problem, plan, d.tensors(), nullptr);
    d.download(c);
    ASSERT_EQ(c.out, first) << "run " << i;
    ASSERT_EQ(std::memcmp(c.lse.data(), first_lse.data(), c.lse.size() * 4), 0) << "run " << i;
  }
}

TEST_F(CudaEngineTest, OneWorkspaceServesDifferentPlansInTurn) {
  if (!compiled(DType::f16, 64)) GTEST_SKIP() << "f16 head_dim 64 not in this build";
  DecodeProblem p = harness::test_problem({4000, 300, 1}, 16, 2, 64, DType::f16);
  harness::HostCase c = harness::make_case(p, 8);
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  DeviceCase d(c);
  std::vector<Plan> plans = {plan_for(c.problem, Strategy::lean, 50, 16),
                             plan_for(c.problem, Strategy::split, 50),
                             plan_for(c.problem, Strategy::lean, 7, 32)};
  std::int64_t bytes = 0;
  for (const Plan& pl : plans) bytes = std::max(bytes, engine().workspace_bytes(pl));
  DeviceBuffer ws(static_cast<std::size_t>(bytes));
  for (int round = 0; round < 3; ++round) {
    for (const Plan& pl : plans) {
      d.poison();
      engine().run(c.problem, pl, d.tensors(), ws.data(), nullptr);
      harness::poison_outputs(c);
      d.download(c);
      const harness::Accuracy a = harness::check_accuracy(c, ref, true);
      EXPECT_TRUE(a.ok()) << "round " << round << " (" << a.first_problem << "); "
                          << testing::classify_rows(c, pl, ref, a.tolerance).summary();
    }
  }
}

TEST_F(CudaEngineTest, StridedOutputAndLse) {
  if (!compiled(DType::bf16, 64)) GTEST_SKIP() << "bf16 head_dim 64 not in this build";
  DecodeProblem p = harness::test_problem({500, 0, 77}, 4, 2, 64, DType::bf16);
  harness::HostCase c = harness::make_case(p, 6);
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  DeviceCase d(c);
  // Output stored [q_heads, batch, head_dim] with a gap of 8 elements between rows.
  const std::int64_t row = 64 + 8;
  DeviceBuffer out(static_cast<std::size_t>(4 * 3 * row) * 2), lse(3 * 6 * sizeof(float));
  ASSERT_EQ(cudaMemset(out.data(), 0, out.size()), cudaSuccess);
  DecodeTensors t = d.tensors();
  t.out = out.data();
  t.out_stride_batch = row;
  t.out_stride_head = 3 * row;
  t.lse = lse.as<float>();
  t.lse_stride_batch = 6;
  engine().decode(c.problem, t, nullptr, {.tile_tokens = 32});
  std::vector<std::uint16_t> host_out(static_cast<std::size_t>(4 * 3 * row));
  std::vector<float> host_lse(18);
  ASSERT_EQ(cudaMemcpy(host_out.data(), out.data(), out.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host_lse.data(), lse.data(), lse.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (std::int32_t b = 0; b < 3; ++b) {
    for (std::int32_t h = 0; h < 4; ++h) {
      for (std::int32_t i = 0; i < 64; ++i) {
        const double want = ref.out[(static_cast<std::size_t>(b) * 4 + h) * 64 + i];
        const float got =
            bf16_bits_to_float(host_out[static_cast<std::size_t>(h * 3 * row + b * row + i)]);
        EXPECT_NEAR(got, want, 2e-2) << b << " " << h << " " << i;
      }
      EXPECT_EQ(host_out[static_cast<std::size_t>(h * 3 * row + b * row + 64)], 0);  // gap kept
      const double want_lse = ref.lse[static_cast<std::size_t>(b) * 4 + h];
      const float got_lse = host_lse[static_cast<std::size_t>(b * 6 + h)];
      if (std::isinf(want_lse)) {
        EXPECT_EQ(got_lse, want_lse);
      } else {
        EXPECT_NEAR(got_lse, want_lse, 1e-3);
      }
    }
  }
}

TEST_F(CudaEngineTest, RejectsUnsupportedAndMisalignedInputs) {
  if (!compiled(DType::f16, 64)) GTEST_SKIP() << "f16 head_dim 64 not in this build";
  DecodeProblem p = harness::test_problem({100, 20}, 4, 2, 64, DType::f32);
  EXPECT_FALSE(engine().can_run(p));
  EXPECT_THROW(engine().plan(p), Error);
  p.q_dtype = p.kv_dtype = DType::f16;
  harness::HostCase c = harness::make_case(p, 9);
  DeviceCase d(c);
  DecodeTensors t = d.tensors();
  t.q = static_cast<const std::byte*>(t.q) + 2;
  try {
    engine().decode(c.problem, t);
    ADD_FAILURE() << "misaligned q accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "q");
  }
  DecodeProblem other = c.problem;
  other.seq_lens = {100, 21};
  EXPECT_THROW(engine().run(c.problem, engine().plan(other), d.tensors()), Error);
}

TEST_F(CudaEngineTest, WorkerCountComesFromOccupancy) {
  if (!compiled(DType::bf16, 128)) GTEST_SKIP() << "bf16 head_dim 128 not in this build";
  const DecodeProblem p = harness::test_problem({100}, 32, 8, 128, DType::bf16);
  const std::int32_t w = engine().workers_for(p);
  EXPECT_GE(w, sms());
  EXPECT_EQ(w % sms(), 0);
  EXPECT_EQ(engine().plan(p).workers, w);
  Engine fixed({.workers = 5});
  EXPECT_EQ(fixed.plan(p).workers, 5);
}

}  // namespace
}  // namespace leanattn::cuda
