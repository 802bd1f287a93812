// Random decode problems (see random_problem.hpp).
#include "harness/random_problem.hpp"

#include <algorithm>
#include <array>

namespace leanattn::harness {

namespace {

template <class T, std::size_t N>
T pick(std::mt19937_64& rng, const std::array<T, N>& options) {
  return options[std::uniform_int_distribution<std::size_t>(0, N - 1)(rng)];
}

std::int32_t uniform(std::mt19937_64& rng, std::int32_t lo, std::int32_t hi) {
  return std::uniform_int_distribution<std::int32_t>(lo, hi)(rng);
}

// q_len and the variant; lengths below q_len (but not 0) grow to q_len.
void draw_variant(std::mt19937_64& rng, std::int32_t tile, std::int32_t max_len, DecodeProblem& p) {
  if (uniform(rng, 0, 1) == 0) p.q_len = uniform(rng, 2, std::min(8, std::max(2, max_len)));
  for (std::int32_t& len : p.seq_lens) {
    if (len > 0 && len < p.q_len) len = p.q_len;
  }
  AttentionVariant& v = p.variant;
  v.causal = uniform(rng, 0, 3) != 0;
  if (uniform(rng, 0, 1) == 0) {
    // Windows of 0 and 1 key, on and around a tile edge, shorter and longer than the sequence.
    v.window_left = pick(rng, std::array{0, 1, tile - 1, tile, tile + 1, 2 * tile, 100, 100000});
    v.window_left = std::max(0, v.window_left);
  }
  if (uniform(rng, 0, 2) == 0) v.softcap = pick(rng, std::array{0.5f, 1.0f, 2.5f, 30.0f});
  v.sinks = uniform(rng, 0, 3) == 0;
  v.alibi = uniform(rng, 0, 3) == 0;
}

// A mixed batch: per-request query counts (query_start_loc) of 0, 1 (decode rows) and prefill
// chunks of 2 to 12 tokens (the fp64 checks stay quick; tests/cpu/mixed_batch_test.cpp has a
// 300-token prompt), a whole short request among them; q_len becomes their bound.
void draw_query_counts(std::mt19937_64& rng, DecodeProblem& p) {
  p.query_start_loc.assign(1, 0);
  std::int32_t most = 1;
  for (const std::int32_t len : p.seq_lens) {
    std::int32_t n = 0;
    switch (uniform(rng, 0, 5)) {
      case 0:
        n = 0;
        break;
      case 1:
      case 2:
        n = len == 0 ? 0 : 1;
        break;
      case 3:
        n = std::min(len, 12);  // the whole request when short: a prompt
        break;
      default:
        n = len == 0 ? uniform(rng, 0, 3) : uniform(rng, 1, std::min(len, 12));
        break;
    }
    most = std::max(most, n);
    p.query_start_loc.push_back(p.query_start_loc.back() + n);
  }
  p.q_len = most;
}

}  // namespace

RandomCase random_case(std::mt19937_64& rng, const RandomLimits& lim) {
  RandomCase c;
  DecodeProblem& p = c.problem;
  p.kv_heads = uniform(rng, 1, lim.max_kv_heads);
  p.q_heads = p.kv_heads * uniform(rng, 1, lim.max_group);
  p.head_dim =
      lim.any_head_dim ? 16 * uniform(rng, 1, 16) : pick(rng, std::array{16, 32, 48, 64, 128});
  p.q_dtype = p.kv_dtype = pick(rng, std::array{DType::f32, DType::f16, DType::bf16});

  const std::int32_t tile = pick(rng, std::array{1, 3, 16, 32, 64, 128, 0});
  c.options.tile_tokens = tile;
  const std::int32_t t = tile == 0 ? 128 : tile;
  const std::int32_t batch = uniform(rng, 1, lim.max_batch);
  const bool one_long = uniform(rng, 0, 4) == 0;  // one long request among short ones
  for (std::int32_t b = 0; b < batch; ++b) {
    std::int32_t len = 0;
    switch (uniform(rng, 0, 8)) {
      case 0:
        len = 0;
        break;
      case 1:
        len = 1;
        break;
      case 2:
        len = std::max(0, t - 1);
        break;
      case 3:
        len = t;
        break;
      case 4:
        len = t + 1;
        break;
      case 5:
        len = 97;
        break;
      case 6:
        len = t * uniform(rng, 2, 5);
        break;
      default:
        len = uniform(rng, 0, lim.max_len);
        break;
    }
    if (one_long && b == 0) len = lim.max_len;
    p.seq_lens.push_back(std::min(len, lim.max_len));
  }
  if (lim.long_len > lim.max_len) p.seq_lens[0] = uniform(rng, lim.max_len + 1, lim.long_len);
  if (lim.variants) draw_variant(rng, t, lim.max_len, p);
  if (uniform(rng, 0, 2) == 0) {
    p.layout = KvLayout::paged;
    p.page_size = pick(rng, std::array{1, 3, 16, 128});
    std::int64_t needed = 0;
    std::int32_t most = 1;
    for (std::int32_t len : p.seq_lens) {
      needed += pages_for(len, p.page_size);
      most = std::max(most, static_cast<std::int32_t>(pages_for(len, p.page_size)));
    }
    p.max_pages = most + uniform(rng, 0, 2);
    p.num_pages = needed + uniform(rng, 1, 4);
  } else {
    p.layout = KvLayout::contiguous;
    const std::int32_t longest = *std::max_element(p.seq_lens.begin(), p.seq_lens.end());
    p.capacity = longest + uniform(rng, 0, 5);
  }
  if (uniform(rng, 0, 3) == 0) p.scale = 0.05f * static_cast<float>(uniform(rng, 1, 20));

  c.hardware.workers = uniform(rng, 0, 3) == 0 ? uniform(rng, 1, lim.max_workers)
                                               : uniform(rng, 1, std::min(lim.max_workers, 12));
  c.options.strategy = pick(rng, std::array{Strategy::lean, Strategy::split, Strategy::head});
  if (c.options.strategy == Strategy::split && uniform(rng, 0, 2) == 0) {
    c.options.splits = uniform(rng, 1, 8);
  }
  c.options.order =
      pick(rng, std::array{LineOrder::head_major, LineOrder::token_major, LineOrder::automatic});
  if (c.options.strategy == Strategy::lean && uniform(rng, 0, 4) == 0) {
    c.options.batch_invariant = true;
    c.options.chunk_tiles = uniform(rng, 0, 5);
  }
  // Drawn last, so the draws above stay those of earlier versions for a given seed.
  if (lim.quantized_kv && uniform(rng, 0, 2) == 0) {  // an 8-bit cache, any scale granularity
    p.kv_dtype = pick(rng, std::array{DType::fp8_e4m3, DType::fp8_e5m2, DType::int8});
    p.kv_scales = pick(
        rng, std::array{KvScales::per_tensor, KvScales::per_kv_head, KvScales::per_token_head});
  }
  // Last again (and only with limits.bias: the CUDA tests turn it off): a case's other draws
  // stay those of earlier versions.
  if (lim.variants && lim.bias && uniform(rng, 0, 3) == 0) {
    p.variant.bias = true;
    p.bias_dtype = pick(rng, std::array{DType::f32, DType::f16, DType::bf16});
  }
  // Last once more: ggml's block formats, whose blocks need head_dim a multiple of 32; a third
  // of them with V of another type (llama.cpp's -ctk and -ctv differ).
  if (lim.block_kv && p.head_dim % kBlockValues == 0 && uniform(rng, 0, 4) == 0) {
    p.kv_dtype = pick(rng, std::array{DType::q8_0, DType::q4_0});
    p.kv_scales = KvScales::none;
    if (uniform(rng, 0, 2) == 0) {
      p.v_dtype = pick(rng, std::array{DType::f16, DType::q8_0, DType::q4_0});
      if (uniform(rng, 0, 1) == 0) std::swap(p.kv_dtype, *p.v_dtype);  // V the block format
    }
  }
  // Last of all: V narrower than K (DeepSeek's K 192 / V 128), half of them read from K's rows
  // (the absorbed MLA cache, which needs V of K's type), one in four of those MLA's own shape.
  const std::int32_t step = is_block_format(p.value_dtype()) ? kBlockValues : kHeadDimMultiple;
  if (lim.value_widths && p.head_dim >= 2 * step && uniform(rng, 0, 5) == 0) {
    p.head_dim_v = step * uniform(rng, 1, p.head_dim / step - 1);
    c.shared_kv = p.value_dtype() == p.kv_dtype && uniform(rng, 0, 1) == 0;
    if (c.shared_kv && uniform(rng, 0, 3) == 0) {
      p.q_heads /= p.kv_heads;
      p.kv_heads = 1;
      p.head_dim = 576;
      p.head_dim_v = 512;
    }
  }
  // After all of that: a mixed batch (per-request query counts).
  if (lim.variants && lim.mixed_queries && uniform(rng, 0, 3) == 0) draw_query_counts(rng, p);
  return c;
}

}  // namespace leanattn::harness
