// ggml's block formats (q8_0, q4_0: 32 values with one f16 scale per block) as K/V caches in the
// CPU engine, for every SIMD target compiled in and supported here, against the fp64 reference,
// which decodes each block from the format's definition on its own (src/reference/
// read_element.hpp). Outputs are poisoned before each run; every strategy, worker counts and
// tiles that cut requests and heads, contiguous and paged caches, mixed and empty lengths,
// q_len > 1 with the variants, K and V of different types, every code with special scales (0,
// subnormal, negative), and rows at odd byte addresses and strides (ggml's rows are 34- or
// 18-byte blocks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/engine_fixture.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/core/float16.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

constexpr DType kFormats[] = {DType::q8_0, DType::q4_0};

class BlockFormatsTest : public SimdEngineTest {
 protected:
  // Every strategy with `workers` threads and `tile`-token tiles on `tensors`, each against `ref`.
  void check_strategies(harness::HostCase& c, const DecodeTensors& tensors,
                        const reference::Output& ref, const harness::NaiveBaseline& naive,
                        std::int32_t workers, std::int32_t tile, const std::string& what) {
    for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
      harness::poison_outputs(c);
      Executor& e = engine(workers);
      e.run(c.problem, e.plan(c.problem, {.strategy = s, .tile_tokens = tile}), tensors);
      const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
      ASSERT_TRUE(a.ok()) << what << " strategy " << strategy_name(s) << " workers " << workers
                          << " tile " << tile << ": err " << a.max_abs_err << " > tol "
                          << a.tolerance << ", lse err " << a.max_lse_err << ", mismatches "
                          << a.mismatches << " (" << a.first_problem << ")";
    }
  }
  void check_strategies(harness::HostCase& c, std::int32_t workers, std::int32_t tile,
                        const std::string& what) {
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const auto naive = harness::naive_same_precision(c.problem, c.tensors());
    check_strategies(c, c.tensors(), ref, naive, workers, tile, what);
  }
};

DecodeProblem block_problem(std::vector<std::int32_t> lens, std::int32_t q_heads,
                            std::int32_t kv_heads, std::int32_t d, DType q_dtype, DType kv_dtype) {
  DecodeProblem p = harness::test_problem(std::move(lens), q_heads, kv_heads, d, q_dtype);
  p.kv_dtype = kv_dtype;
  return p;
}

TEST_P(BlockFormatsTest, EveryFormatAndLayoutAcrossWorkersAndTiles) {
  for (DType kv : kFormats) {
    for (std::int32_t page_size : {0, 1, 16}) {
      DecodeProblem p = block_problem({97, 0, 1, 63, 64, 65, 700, 5}, 8, 2, 64, DType::f16, kv);
      if (page_size > 0) {
        p.layout = KvLayout::paged;
        p.page_size = page_size;
      }
      harness::HostCase c = harness::make_case(p, 11);
      for (std::int32_t workers : {1, 3, 7, 64}) {
        for (std::int32_t tile : {16, 0}) {
          check_strategies(c, workers, tile,
                           std::string(dtype_name(kv)) + " page size " + std::to_string(page_size));
        }
      }
    }
  }
}

// SmolLM2's shape (9 query / 3 KV heads, d 64: a q8_0 head row of 68 bytes, a token row of
// 204) and others, every query type, head dims up to 256, groups up to 8 rows per pass.
TEST_P(BlockFormatsTest, QueryTypesHeadDimsAndGroups) {
  for (DType q : {DType::f32, DType::f16, DType::bf16}) {
    for (std::int32_t d : {32, 64, 96, 128, 256}) {
      for (std::int32_t group : {1, 3, 4, 8}) {
        const DType kv = kFormats[static_cast<std::size_t>(d / 32 + group) % 2];
        DecodeProblem p = block_problem({130, 33, 0}, 3 * group, 3, d, q, kv);
        p.layout = KvLayout::paged;
        p.page_size = 3;
        harness::HostCase c = harness::make_case(p, static_cast<std::uint64_t>(d * 10 + group));
        check_strategies(c, 3, 32,
                         std::string(dtype_name(kv)) + " q " + std::string(dtype_name(q)) + " d " +
                             std::to_string(d) + " group " + std::to_string(group));
      }
    }
  }
}

// Several query tokens (causal), a window, a soft-cap, sinks and ALiBi together.
TEST_P(BlockFormatsTest, VariantsAndSeveralQueryTokens) {
  for (DType kv : kFormats) {
    DecodeProblem p = block_problem({300, 0, 4, 129}, 8, 2, 64, DType::bf16, kv);
    p.q_len = 4;
    p.variant = {.causal = true, .window_left = 70, .softcap = 2.5f, .sinks = true, .alibi = true};
    harness::HostCase c = harness::make_case(p, 5);
    for (std::int32_t workers : {2, 7}) {
      check_strategies(c, workers, 16, std::string(dtype_name(kv)) + " variants");
    }
  }
}

// K and V of different types (llama.cpp's -ctk and -ctv may differ): every pair of f16, q8_0
// and q4_0, contiguous and paged, GQA groups of 3 (d 64) and 8 (d 256: a full AVX-512 pass).
TEST_P(BlockFormatsTest, KAndVOfDifferentTypes) {
  const DType types[] = {DType::f16, DType::q8_0, DType::q4_0};
  struct Shape {
    std::int32_t d, q_heads, kv_heads;
  };
  std::uint64_t seed = 40;
  for (const Shape shape : {Shape{64, 9, 3}, Shape{256, 16, 2}}) {  // groups of 3 and 8 rows
    for (DType k : types) {
      for (DType v : types) {
        if (k == v) continue;
        for (std::int32_t page_size : {0, 5}) {
          DecodeProblem p =
              block_problem({150, 0, 33, 1}, shape.q_heads, shape.kv_heads, shape.d, DType::f16, k);
          p.v_dtype = v;
          if (page_size > 0) {
            p.layout = KvLayout::paged;
            p.page_size = page_size;
          }
          harness::HostCase c = harness::make_case(p, seed++);
          for (std::int32_t workers : {1, 5}) {
            check_strategies(c, workers, 16,
                             "K " + std::string(dtype_name(k)) + " V " +
                                 std::string(dtype_name(v)) + " d " + std::to_string(shape.d) +
                                 " page size " + std::to_string(page_size));
          }
        }
      }
    }
  }
}

// Rows at odd byte addresses: the cache starts 1 byte into its buffer, a head's row is 3 bytes
// after the previous one's end, a token's 5 bytes (no alignment beyond the byte, as ggml's).
TEST_P(BlockFormatsTest, RowsAtOddByteAddresses) {
  for (DType kv : kFormats) {
    DecodeProblem p = block_problem({77, 0, 40}, 6, 3, 64, DType::f16, kv);
    harness::HostCase c = harness::make_case(p, 23);
    const DecodeTensors dense = c.tensors();
    const std::int64_t row = row_units(kv, p.head_dim);
    DecodeTensors odd = dense;
    odd.k_strides.head = odd.v_strides.head = row + 3;
    odd.k_strides.token = odd.v_strides.token = p.kv_heads * (row + 3) + 5;
    odd.k_strides.outer = odd.v_strides.outer = c.problem.capacity * odd.k_strides.token;
    const std::int64_t bytes = c.problem.batch() * odd.k_strides.outer + 1;
    std::vector<unsigned char> k(static_cast<std::size_t>(bytes), 0xff), v(k);
    for (std::int32_t b = 0; b < c.problem.batch(); ++b) {
      for (std::int64_t t = 0; t < c.problem.capacity; ++t) {
        for (std::int32_t h = 0; h < p.kv_heads; ++h) {
          const std::int64_t from = b * dense.k_strides.outer + t * dense.k_strides.token + h * row;
          const std::int64_t to =
              1 + b * odd.k_strides.outer + t * odd.k_strides.token + h * odd.k_strides.head;
          std::memcpy(&k[static_cast<std::size_t>(to)], c.k.data() + from, row);
          std::memcpy(&v[static_cast<std::size_t>(to)], c.v.data() + from, row);
        }
      }
    }
    odd.k_cache = k.data() + 1;
    odd.v_cache = v.data() + 1;
    const auto ref = reference::naive_attention(c.problem, odd);
    const auto naive = harness::naive_same_precision(c.problem, odd);
    for (std::int32_t workers : {1, 4}) {
      check_strategies(c, odd, ref, naive, workers, 16, std::string(dtype_name(kv)) + " odd rows");
    }
  }
}

// Every code through the SIMD loaders, with scales 0, subnormal, negative and the f16 extremes:
// request b has one token whose V row (d 64: two blocks) holds the codes b, b + 1, ... (mod 256
// bytes); a single key has weight 1, so the output is the decoded V row itself, exactly (a code
// times an f16 scale is exact in f32; f32 output).
TEST_P(BlockFormatsTest, LoadersDecodeEveryCodeAndScale) {
  const float scales[] = {0.5f, 0.0f, 5.9604644775390625e-08f, -0.25f, 65504.0f, -6.1e-5f};
  for (DType kv : kFormats) {
    for (float scale : scales) {
      DecodeProblem p = block_problem(std::vector<std::int32_t>(256, 1), 1, 1, 64, DType::f32, kv);
      harness::HostCase c = harness::make_case(p, 1);
      auto* v = reinterpret_cast<std::uint8_t*>(c.v.data());
      const std::int32_t bytes = block_bytes(kv);
      for (std::int32_t b = 0; b < 256; ++b) {
        for (std::int32_t block = 0; block < 2; ++block) {  // the second block's scale halved
          const std::uint16_t bits = float_to_f16_bits(block == 0 ? scale : scale * 0.5f);
          std::uint8_t* at = v + (b * 2 + block) * bytes;
          at[0] = static_cast<std::uint8_t>(bits & 0xff);
          at[1] = static_cast<std::uint8_t>(bits >> 8);
          for (std::int32_t j = 0; j < bytes - 2; ++j) {
            at[2 + j] = static_cast<std::uint8_t>(b + block * 32 + j);
          }
        }
      }
      harness::poison_outputs(c);
      Executor& e = engine(2);
      e.run(c.problem, e.plan(c.problem, {}), c.tensors());
      const auto ref = reference::naive_attention(c.problem, c.tensors());
      const std::vector<double> out = harness::read_output(c);
      for (std::size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out[i], ref.out[i])
            << dtype_name(kv) << " scale " << scale << " request " << i / 64 << " value " << i % 64;
      }
    }
  }
}

// Every code through the K loaders, position by position: request b * 64 + i has a one-hot query
// (dimension i), key 0 the codes b, b + 1, ... (mod 256 bytes) with scales 1/64 and 2/64 in its two
// blocks (every score in [-4, 4]) and key 1 all zero; V is 1 for key 0 and 0 for key 1. The output
// is then the weight of key 0, sigmoid(code value x scale) (and the lse log(1 + e^s)): one code or
// scale misread moves it by more than 1e-4, where the arithmetic's error is below 1e-6.
TEST_P(BlockFormatsTest, ScoreLoadersDecodeEveryCodeAtEveryPosition) {
  constexpr std::int32_t kD = 64, kPatterns = 256;
  for (DType kv : kFormats) {
    DecodeProblem p =
        block_problem(std::vector<std::int32_t>(kPatterns * kD, 2), 1, 1, kD, DType::f32, kv);
    p.scale = 1.0f;
    harness::HostCase c = harness::make_case(p, 3);
    const std::int32_t bytes = block_bytes(kv), row = kD / kBlockValues * bytes;
    auto set_block = [bytes](std::uint8_t* at, float scale, auto code) {
      const std::uint16_t bits = float_to_f16_bits(scale);
      at[0] = static_cast<std::uint8_t>(bits & 0xff);
      at[1] = static_cast<std::uint8_t>(bits >> 8);
      for (std::int32_t j = 2; j < bytes; ++j) at[j] = code(j - 2);
    };
    auto* k = reinterpret_cast<std::uint8_t*>(c.k.data());
    auto* v = reinterpret_cast<std::uint8_t*>(c.v.data());
    auto* q = reinterpret_cast<float*>(c.q.data());
    // The value 1 in every position of a V row: q8_0 code 1 with scale 1, q4_0 nibbles 9 (9 - 8).
    const std::uint8_t one = kv == DType::q8_0 ? 1 : 0x99;
    for (std::int32_t r = 0; r < kPatterns * kD; ++r) {
      const std::int32_t b = r / kD, i = r % kD;
      std::fill(q + r * kD, q + (r + 1) * kD, 0.0f);
      q[r * kD + i] = 1.0f;
      for (std::int32_t blk = 0; blk < kD / kBlockValues; ++blk) {
        const std::int64_t key0 = static_cast<std::int64_t>(r) * 2 * row + blk * bytes;
        set_block(k + key0, (1.0f + static_cast<float>(blk)) / 64,
                  [&](std::int32_t j) { return static_cast<std::uint8_t>(b + blk * 32 + j); });
        set_block(k + key0 + row, 0.0f, [](std::int32_t) { return std::uint8_t{0}; });
        set_block(v + key0, 1.0f, [&](std::int32_t) { return one; });
        set_block(v + key0 + row, 0.0f, [](std::int32_t) { return std::uint8_t{0}; });
      }
    }
    harness::poison_outputs(c);
    Executor& e = engine(2);
    e.run(c.problem, e.plan(c.problem, {}), c.tensors());
    const auto ref = reference::naive_attention(c.problem, c.tensors());
    const std::vector<double> out = harness::read_output(c);
    for (std::size_t r = 0; r < out.size() / kD; ++r) {
      ASSERT_NEAR(out[r * kD], ref.out[r * kD], 1e-6)
          << dtype_name(kv) << " pattern " << r / kD << " position " << r % kD;
      ASSERT_NEAR(c.lse[r], ref.lse[r], 1e-6)
          << dtype_name(kv) << " pattern " << r / kD << " position " << r % kD;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SimdTargets, BlockFormatsTest, ::testing::ValuesIn(tested_simd_targets()),
                         simd_target_name);

}  // namespace
}  // namespace leanattn
