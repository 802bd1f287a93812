// Quantized (8-bit) KV caches in the CPU engine, for every SIMD target compiled in and supported
// here: fp8 e4m3, fp8 e5m2 and int8 with per-tensor, per-KV-head and per-(token, head) scales,
// against the fp64 reference on the dequantized values (the accuracy policy's tolerance covers
// the arithmetic, not the quantization). Outputs are poisoned before each run; every strategy,
// worker counts and tiles that cut requests and heads, contiguous and paged caches, mixed and
// empty lengths, q_len > 1 with the variants, and every 8-bit pattern through the loaders.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/engine_fixture.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

constexpr DType kKvTypes[] = {DType::fp8_e4m3, DType::fp8_e5m2, DType::int8};
constexpr KvScales kGranularities[] = {KvScales::per_tensor, KvScales::per_kv_head,
                                       KvScales::per_token_head};

class QuantizedKvTest : public SimdEngineTest {
 protected:
  // Every strategy with `workers` threads and `tile`-token tiles, each against `ref`.
  void check_strategies(harness::HostCase& c, const reference::Output& ref,
                        const harness::NaiveBaseline& naive, std::int32_t workers,
                        std::int32_t tile, const std::string& what) {
    for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
      harness::poison_outputs(c);
      Executor& e = engine(workers);
      e.run(c.problem, e.plan(c.problem, {.strategy = s, .tile_tokens = tile}), c.tensors());
      const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
      ASSERT_TRUE(a.ok()) << what << " strategy " << strategy_name(s) << " workers " << workers
                          << " tile " << tile << ": err " << a.max_abs_err << " > tol "
                          << a.tolerance << ", lse err " << a.max_lse_err << ", mismatches "
                          << a.mismatches << " (" << a.first_problem << ")";
    }
  }
};

DecodeProblem quantized_problem(std::vector<std::int32_t> lens, std::int32_t q_heads,
                                std::int32_t kv_heads, std::int32_t d, DType q_dtype,
                                DType kv_dtype, KvScales scales) {
  DecodeProblem p = harness::test_problem(std::move(lens), q_heads, kv_heads, d, q_dtype);
  p.kv_dtype = kv_dtype;
  p.kv_scales = scales;
  return p;
}

std::string name(DType kv, KvScales scales, const char* layout) {
  return std::string(dtype_name(kv)) + "/" + std::string(kv_scales_name(scales)) + "/" + layout;
}

TEST_P(QuantizedKvTest, EveryTypeGranularityAndLayoutAcrossWorkersAndTiles) {
  for (DType kv : kKvTypes) {
    for (KvScales scales : kGranularities) {
      for (bool paged : {false, true}) {
        DecodeProblem p =
            quantized_problem({97, 0, 1, 63, 64, 65, 700, 5}, 8, 2, 64, DType::f16, kv, scales);
        if (paged) {
          p.layout = KvLayout::paged;
          p.page_size = 16;
        }
        harness::HostCase c = harness::make_case(p, 11);
        const auto ref = reference::naive_attention(c.problem, c.tensors());
        const auto naive = harness::naive_same_precision(c.problem, c.tensors());
        for (std::int32_t workers : {1, 3, 7, 64}) {
          for (std::int32_t tile : {16, 0}) {
            check_strategies(c, ref, naive, workers, tile,
                             name(kv, scales, paged ? "paged" : "contiguous"));
          }
        }
      }
    }
  }
}

TEST_P(QuantizedKvTest, QueryTypesHeadDimsAndGroups) {
  for (DType q : {DType::f32, DType::f16, DType::bf16}) {
    for (std::int32_t d : {16, 48, 128, 256}) {
      for (std::int32_t group : {1, 3, 4, 8}) {
        const DType kv = kKvTypes[static_cast<std::size_t>(d + group) % 3];
        const KvScales scales = kGranularities[static_cast<std::size_t>(group) % 3];
        DecodeProblem p = quantized_problem({130, 33, 0}, 2 * group, 2, d, q, kv, scales);
        p.layout = KvLayout::paged;
        p.page_size = 3;
        harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(d * 10 + group));
        const auto ref = reference::naive_attention(c.problem, c.tensors());
        const auto naive = harness::naive_same_precision(c.problem, c.tensors());
        check_strategies(c, ref, naive, 3, 32,
                         name(kv, scales, "paged") + " q " + std::string(dtype_name(q)) + " d " +
                             std::to_string(d) + " group " + std::to_string(group));
      }
    }
  }
}

// Several query tokens (causal), a window, a soft-cap, sinks and ALiBi together on 8-bit caches.
TEST_P(QuantizedKvTest, VariantsAndSeveralQueryTokens) {
  for (DType kv : kKvTypes) {
    DecodeProblem p =
        quantized_problem({300, 0, 4, 129}, 8, 2, 64, DType::bf16, kv, KvScales::per_token_head);
    p.q_len = 4;
    p.variant = {.causal = true, .window_left = 70, .softcap = 2.5f, .sinks = true, .alibi = true};
    harness::HostCase c = harness::make_case(p, 5);
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    for (std::int32_t workers : {2, 7}) {
      check_strategies(c, ref, naive, workers, 16, name(kv, p.kv_scales, "variants"));
    }
  }
}

// Every 8-bit pattern through the SIMD loaders: request b has one token whose V row holds the
// patterns b, b + 1, ... (mod 256); a single key has weight 1, so the output is the dequantized
// V row itself, exactly (scale 0.5: a power of two; f32 output), NaN and infinities included.
TEST_P(QuantizedKvTest, LoadersDecodeEveryBitPattern) {
  for (DType kv : kKvTypes) {
    DecodeProblem p = quantized_problem(std::vector<std::int32_t>(256, 1), 1, 1, 64, DType::f32, kv,
                                        KvScales::per_tensor);
    harness::HostCase c = harness::make_case(p, 1);
    std::fill(c.k_scale.begin(), c.k_scale.end(), 0.5f);
    std::fill(c.v_scale.begin(), c.v_scale.end(), 0.5f);
    auto* v = reinterpret_cast<std::uint8_t*>(c.v.data());
    for (std::int32_t b = 0; b < 256; ++b) {
      for (std::int32_t i = 0; i < 64; ++i) v[b * 64 + i] = static_cast<std::uint8_t>(b + i);
    }
    harness::poison_outputs(c);
    Executor& e = engine(2);
    e.run(c.problem, e.plan(c.problem, {}), c.tensors());
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const std::vector<double> out = harness::read_output(c);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double want = ref.out[i];
      const bool same = std::isnan(want) ? std::isnan(out[i]) : out[i] == want;
      ASSERT_TRUE(same) << dtype_name(kv) << " pattern 0x" << std::hex << int{v[i]} << std::dec
                        << ": got " << out[i] << ", want " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, QuantizedKvTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

}  // namespace
}  // namespace leanattn
