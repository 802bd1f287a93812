// HostCase construction, random fill and poisoning.
#include "harness/host_case.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

#include "leanattn/core/float16.hpp"
#include "leanattn/core/float8.hpp"
#include "leanattn/error.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::harness {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sum of three uniforms, centred and scaled to unit variance: close enough to N(0, 1).
float normal_at(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t h = splitmix64(seed * 0x9e3779b97f4a7c15ull + i);
  const float u0 = static_cast<float>(h & 0x1fffff) / 2097152.0f;
  const float u1 = static_cast<float>((h >> 21) & 0x1fffff) / 2097152.0f;
  const float u2 = static_cast<float>((h >> 42) & 0x1fffff) / 2097152.0f;
  return (u0 + u1 + u2 - 1.5f) * 2.0f;
}

void fill_range(void* dst, DType type, std::int64_t begin, std::int64_t end, std::uint64_t seed) {
  const float inv_nominal = 1.0f / nominal_kv_scale(type);
  for (std::int64_t i = begin; i < end; ++i) {
    const float f = normal_at(seed, static_cast<std::uint64_t>(i));
    switch (type) {
      case DType::f32:
        static_cast<float*>(dst)[i] = f;
        break;
      case DType::f16:
        static_cast<std::uint16_t*>(dst)[i] = float_to_f16_bits(f);
        break;
      case DType::bf16:
        static_cast<std::uint16_t*>(dst)[i] = float_to_bf16_bits(f);
        break;
      case DType::fp8_e4m3:
        static_cast<std::uint8_t*>(dst)[i] = float_to_e4m3_bits(f * inv_nominal);
        break;
      case DType::fp8_e5m2:
        static_cast<std::uint8_t*>(dst)[i] = float_to_e5m2_bits(f * inv_nominal);
        break;
      case DType::int8:
        static_cast<std::int8_t*>(dst)[i] = float_to_int8(f * inv_nominal);
        break;
      case DType::q8_0:
      case DType::q4_0:
        break;  // fill_blocks
    }
  }
}

// Blocks [begin, end) of a block format (dtype.hpp) at dst. Most hold N(0, 1) values quantized as
// ggml's reference quantizers do (q8_0: d = max |x| / 127, q = round(x / d); q4_0: d = the value
// of largest magnitude / -8, q = min(15, trunc(x / d + 8.5))); one in 8 holds codes drawn from
// every pattern (all 256 or 16) with a scale that is 0, an f16 subnormal or negative, the cases
// a quantizer rarely writes but a reader must decode.
void fill_blocks(void* dst, DType type, std::int64_t begin, std::int64_t end, std::uint64_t seed) {
  const std::int32_t bytes = block_bytes(type);
  for (std::int64_t b = begin; b < end; ++b) {
    auto* block = static_cast<std::uint8_t*>(dst) + b * bytes;
    const std::uint64_t h = splitmix64(seed ^ (static_cast<std::uint64_t>(b) << 8));
    float x[kBlockValues];
    for (int j = 0; j < kBlockValues; ++j) {
      x[j] = normal_at(seed, static_cast<std::uint64_t>(b) * kBlockValues + j);
    }
    float d = 0.0f;
    if (h % 8 == 0) {  // every code pattern, a special scale
      const float special[4] = {0.0f, 3.0e-6f, -0.03f, -6.0e-8f};
      d = special[(h >> 3) % 4];
      for (int j = 0; j < bytes - 2; ++j)
        block[2 + j] = static_cast<std::uint8_t>(splitmix64(h + j));
    } else if (type == DType::q8_0) {
      float amax = 0.0f;
      for (float v : x) amax = std::max(amax, std::abs(v));
      d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int j = 0; j < kBlockValues; ++j) {
        block[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::lround(x[j] * id)));
      }
    } else {
      float max = 0.0f;
      for (float v : x) max = std::abs(v) > std::abs(max) ? v : max;
      d = max / -8.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      auto code = [&](int j) {
        return static_cast<std::uint8_t>(std::min(15, static_cast<int>(x[j] * id + 8.5f)));
      };
      for (int j = 0; j < 16; ++j)
        block[2 + j] = static_cast<std::uint8_t>(code(j) | code(j + 16) << 4);
    }
    const std::uint16_t bits = float_to_f16_bits(d);
    block[0] = static_cast<std::uint8_t>(bits & 0xff);
    block[1] = static_cast<std::uint8_t>(bits >> 8);
  }
}

// Scale entries of a problem's quantized K or V cache (tensors.hpp's layouts); 0 without scales.
std::int64_t scale_count(const DecodeProblem& p) {
  switch (p.kv_scales) {
    case KvScales::none:
      return 0;
    case KvScales::per_tensor:
      return 1;
    case KvScales::per_kv_head:
      return p.kv_heads;
    case KvScales::per_token_head:
      return p.kv_heads * (p.layout == KvLayout::contiguous ? p.batch() * p.capacity
                                                            : p.num_pages * p.page_size);
  }
  return 0;
}

}  // namespace

float nominal_kv_scale(DType type) {
  switch (type) {
    case DType::fp8_e4m3:
      return 4.0f / kE4m3Max;
    case DType::fp8_e5m2:
      return 4.0f / kE5m2Max;
    case DType::int8:
      return 4.0f / kInt8Max;
    default:
      return 1.0f;
  }
}

void fill_scales(float* dst, DType type, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = 0; i < count; ++i) {
    dst[i] =
        nominal_kv_scale(type) * std::exp2(0.5f * normal_at(seed, static_cast<std::uint64_t>(i)));
  }
}

void fill_normal(void* dst, DType type, std::int64_t count, std::uint64_t seed) {
  const std::int64_t threads = count < (1 << 22) ? 1 : std::int64_t{default_workers()};
  const bool blocks = is_block_format(type);
  const auto fill = blocks ? fill_blocks : fill_range;
  if (blocks) count /= kBlockValues;
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads; ++t) {
    pool.emplace_back(fill, dst, type, t * count / threads, (t + 1) * count / threads, seed);
  }
  fill(dst, type, 0, count / threads, seed);
  for (auto& th : pool) th.join();
}

DecodeTensors HostCase::tensors() {
  DecodeTensors t =
      dense_tensors(problem, q.data(), k.data(), shared_kv ? nullptr : v.data(),
                    block_table.empty() ? nullptr : block_table.data(), out.data(), lse.data());
  t.k_scale = k_scale.empty() ? nullptr : k_scale.data();
  t.v_scale = shared_kv ? t.k_scale : v_scale.empty() ? nullptr : v_scale.data();
  t.sinks = sinks.empty() ? nullptr : sinks.data();
  t.alibi_slopes = alibi_slopes.empty() ? nullptr : alibi_slopes.data();
  t.bias = bias.empty() ? nullptr : bias.data();
  t.bias_stride_batch = bias_stride_batch;
  t.bias_stride_token = bias_stride_token;
  t.bias_stride_head = bias_stride_head;
  return t;
}

namespace {

// Element i of a 16- or 32-bit float array.
void write_float(void* dst, DType type, std::int64_t i, float f) {
  if (type == DType::f16) {
    static_cast<std::uint16_t*>(dst)[i] = float_to_f16_bits(f);
  } else if (type == DType::bf16) {
    static_cast<std::uint16_t*>(dst)[i] = float_to_bf16_bits(f);
  } else {
    static_cast<float*>(dst)[i] = f;
  }
}

// The variant bias (see make_case): [query tokens, heads, keys] in p.bias_dtype (query_index).
void fill_bias(HostCase& c, const DecodeProblem& p, std::int32_t keys, std::uint64_t seed) {
  const std::int64_t heads = seed % 2 == 1 ? 1 : p.q_heads;
  const std::int64_t n = std::max(keys, 1);
  c.bias_stride_head = heads == 1 ? 0 : n;
  c.bias_stride_token = heads * n;
  c.bias_stride_batch = p.has_query_start_loc() ? 0 : p.q_len * heads * n;
  const std::int64_t rows = p.total_queries() * heads;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> row(static_cast<std::size_t>(n));
  c.bias.resize(static_cast<std::size_t>(rows * n) * dtype_size(p.bias_dtype));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (float& x : row) x = value(rng);
    if (rng() % 16 == 0) {
      std::fill(row.begin(), row.end(), -inf);
    } else {
      for (std::int64_t covered = 0; covered < n / 5;) {  // runs of -inf or 0
        const std::int64_t len = 1 + static_cast<std::int64_t>(rng() % 40);
        const std::int64_t at = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
        const float fill = rng() % 2 == 0 ? -inf : 0.0f;
        std::fill(row.begin() + at, row.begin() + std::min(n, at + len), fill);
        covered += len;
      }
    }
    for (std::int64_t j = 0; j < n; ++j) {
      write_float(c.bias.data(), p.bias_dtype, r * n + j, row[static_cast<std::size_t>(j)]);
    }
  }
}

}  // namespace

HostCase make_case(DecodeProblem p, std::uint64_t seed, bool shared_kv) {
  require(!shared_kv || p.value_dtype() == p.kv_dtype, "shared_kv",
          [] { return "needs V of K's type (V is the start of K's rows)"; });
  HostCase c;
  const std::int32_t longest =
      p.seq_lens.empty() ? 0 : *std::max_element(p.seq_lens.begin(), p.seq_lens.end());
  std::int64_t kv_elems = 0;
  const std::int64_t row = static_cast<std::int64_t>(p.kv_heads) * p.head_dim;
  std::int64_t rows = 0;  // token rows of the cache (times kv_heads heads)
  if (p.layout == KvLayout::contiguous) {
    if (p.capacity == 0) p.capacity = longest;
    rows = p.batch() * p.capacity;
    kv_elems = rows * row;
  } else {
    const std::int32_t ps = std::max(p.page_size, 1);
    std::int64_t needed = 0;
    for (std::int32_t len : p.seq_lens) needed += pages_for(len, ps);
    if (p.max_pages == 0) {
      p.max_pages = static_cast<std::int32_t>(std::max<std::int64_t>(1, pages_for(longest, ps)));
    }
    if (p.num_pages == 0) p.num_pages = needed + 3;
    rows = p.num_pages * ps;
    kv_elems = rows * row;
    // Every request's pages come from one shuffled permutation of all pages (reused from the
    // start when a caller-given num_pages is smaller than the pages needed: sharing is legal);
    // unused columns hold -1 to catch reads beyond a request's length.
    std::vector<std::int32_t> perm(static_cast<std::size_t>(p.num_pages));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed ^ 0x5eedull));
    c.block_table.assign(static_cast<std::size_t>(p.batch()) * p.max_pages, -1);
    std::size_t next = 0;
    for (std::int32_t b = 0; b < p.batch(); ++b) {
      const auto pages = static_cast<std::int32_t>(pages_for(p.seq_lens[b], ps));
      for (std::int32_t i = 0; i < pages; ++i) {
        c.block_table[static_cast<std::size_t>(b) * p.max_pages + i] = perm[next++ % perm.size()];
      }
    }
  }
  const std::int64_t q_elems = p.total_queries() * p.q_heads * p.head_dim;
  c.q.resize(static_cast<std::size_t>(q_elems) * dtype_size(p.q_dtype));
  const std::int64_t out_elems = q_elems / std::max(p.head_dim, 1) * p.value_dim();
  c.out.resize(static_cast<std::size_t>(out_elems) * dtype_size(p.q_dtype));
  // K and V hold rows x kv_heads rows of head_dim (V: head_dim_v) values, in a block format
  // row_units bytes each; shared_kv: no V buffer, V is the start of K's rows.
  const std::int64_t v_elems = shared_kv ? 0 : rows * p.kv_heads * p.value_dim();
  auto kv_buffer_bytes = [&](DType type, std::int64_t width) {
    return static_cast<std::size_t>(rows * p.kv_heads * row_units(type, width)) * dtype_size(type);
  };
  c.k.resize(kv_buffer_bytes(p.kv_dtype, p.head_dim));
  c.v.resize(shared_kv ? 0 : kv_buffer_bytes(p.value_dtype(), p.value_dim()));
  c.shared_kv = shared_kv;
  c.lse.resize(static_cast<std::size_t>(p.total_queries()) * p.q_heads);
  if (p.variant.sinks) {
    c.sinks.resize(static_cast<std::size_t>(p.q_heads));
    fill_normal(c.sinks.data(), DType::f32, p.q_heads, seed * 3 + 4);
    for (float& x : c.sinks) x *= 2.0f;
  }
  if (p.variant.alibi) {
    c.alibi_slopes.resize(static_cast<std::size_t>(p.q_heads));
    for (std::int32_t h = 0; h < p.q_heads; ++h) {
      c.alibi_slopes[static_cast<std::size_t>(h)] =
          std::exp2(-8.0f * static_cast<float>(h + 1) / static_cast<float>(p.q_heads));
    }
  }
  if (p.variant.bias) fill_bias(c, p, longest, seed * 7 + 9);
  const std::int64_t scales = scale_count(p);
  c.k_scale.resize(static_cast<std::size_t>(scales));
  c.v_scale.resize(static_cast<std::size_t>(shared_kv ? 0 : scales));
  fill_scales(c.k_scale.data(), p.kv_dtype, scales, seed * 5 + 7);
  if (!shared_kv) fill_scales(c.v_scale.data(), p.kv_dtype, scales, seed * 5 + 8);
  fill_normal(c.q.data(), p.q_dtype, q_elems, seed * 3 + 1);
  fill_normal(c.k.data(), p.kv_dtype, kv_elems, seed * 3 + 2);
  fill_normal(c.v.data(), p.value_dtype(), v_elems, seed * 3 + 3);
  c.problem = std::move(p);
  poison_outputs(c);
  return c;
}

void poison_outputs(HostCase& c) {
  std::fill(c.out.begin(), c.out.end(), std::byte{0xff});  // 0xff..ff is a NaN in f32, f16 and bf16
  std::fill(c.lse.begin(), c.lse.end(), std::numeric_limits<float>::quiet_NaN());
}

std::vector<double> read_output(const HostCase& c) {
  const std::size_t n = c.out.size() / dtype_size(c.problem.q_dtype);
  std::vector<double> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (c.problem.q_dtype == DType::f32) {
      float f;
      std::memcpy(&f, c.out.data() + i * 4, 4);
      r[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, c.out.data() + i * 2, 2);
      r[i] = c.problem.q_dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  return r;
}

}  // namespace leanattn::harness
