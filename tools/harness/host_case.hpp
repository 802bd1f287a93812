// HostCase: a decode problem with its tensors in host memory, filled with seeded random values.
// The shared test harness of the unit tests, `leanattn check` and `leanattn bench`; not part of
// the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/large_buffer.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::harness {

struct HostCase {
  DecodeProblem problem;
  std::vector<std::byte> q;               // [batch, q_len, q_heads, head_dim], q_dtype
  ByteBuffer k;                           // layout of problem.layout, kv_dtype; huge pages
  ByteBuffer v;                           // as k, head_dim_v wide; empty with shared_kv
  bool shared_kv = false;                 // V is the start of K's rows (absorbed MLA)
  std::vector<std::byte> out;             // [batch, q_len, q_heads, head_dim_v], q_dtype
  std::vector<float> lse;                 // [batch, q_len, q_heads]
  std::vector<float> k_scale;             // quantized kv_dtype: the scales of problem.kv_scales
  std::vector<float> v_scale;             //   (tensors.hpp), else empty
  std::vector<float> sinks;               // variant.sinks: [q_heads], else empty
  std::vector<float> alibi_slopes;        // variant.alibi: [q_heads], else empty
  std::vector<std::int32_t> block_table;  // paged: [batch, max_pages]
  std::vector<std::byte> bias;            // variant.bias: [batch, q_len, q_heads or 1, keys] in
  std::int64_t bias_stride_batch = 0;     //   bias_dtype, keys = the longest request; the heads
  std::int64_t bias_stride_token = 0;     //   share one row (stride 0) for odd seeds
  std::int64_t bias_stride_head = 0;

  // Dense views of the buffers above (lse included).
  DecodeTensors tensors();
};

// Completes the layout sizes the caller left at 0 (contiguous: capacity = longest request;
// paged: max_pages = pages of the longest request, num_pages = pages all requests need plus a
// few spare ones), allocates, and fills q, k, v with approximately normal values from `seed`.
// Paged block tables are a random permutation of the pages, so requests are scattered. Sinks
// are drawn around 0 (scale 2); ALiBi slopes are the ALiBi paper's 2^(-8 (h + 1) / q_heads).
// A bias is uniform in [-1, 1] (as llama.cpp's test-backend-ops draws masks) with runs of -inf
// and of 0 over a fifth of the keys, and one row in 16 hidden whole.
// A quantized cache stores N(0, 1) values quantized with the nominal scale (4 / the type's largest
// value: |x| <= 4 fits) and its scales are that nominal scale times 2^(N(0, 1) / 2), so the
// dequantized values are about normal with a spread of magnitudes between blocks.
// shared_kv: no V cache, V is the leading head_dim_v values of K's rows (v_scale = k_scale), the
// absorbed MLA cache; needs V of K's type.
HostCase make_case(DecodeProblem problem, std::uint64_t seed, bool shared_kv = false);

// Overwrites out with NaN bit patterns and lse with NaN, so an executor that skips an output
// cannot pass a comparison.
void poison_outputs(HostCase& c);

// Fills `count` elements of `type` at `dst` with approximately N(0, 1) values derived from
// (seed, index): the same values whatever the thread count. Multithreaded for large buffers. An
// 8-bit type gets them quantized with the nominal scale (nominal_kv_scale); a block format
// (count a multiple of 32) gets count / 32 blocks, most quantized as ggml does, some with special
// scales and codes (host_case.cpp, fill_blocks).
void fill_normal(void* dst, DType type, std::int64_t count, std::uint64_t seed);

// 4 / the largest value of an 8-bit type (N(0, 1) data up to |4| fits); 1 for the others.
float nominal_kv_scale(DType type);

// Scales for `count` blocks: nominal_kv_scale(type) x 2^(N(0, 1) / 2), from `seed`.
void fill_scales(float* dst, DType type, std::int64_t count, std::uint64_t seed);

// The output as doubles, [batch, q_len, q_heads, head_dim_v].
std::vector<double> read_output(const HostCase& c);

}  // namespace leanattn::harness
