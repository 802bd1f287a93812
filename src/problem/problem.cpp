// DecodeProblem helpers and its validator. Called by make_plan() and every executor before any
// memory is touched.
#include "leanattn/problem.hpp"

#include <cmath>
#include <string>

#include "leanattn/core/variant_rules.hpp"
#include "leanattn/error.hpp"
#include "problem/mutation.hpp"

namespace leanattn {

namespace {

std::string got(std::int64_t v) {
  return " (got " + std::to_string(v) + ")";
}

// query_start_loc: empty, or batch + 1 prefix sums from 0, each count in [0, q_len].
void validate_query_start_loc(const DecodeProblem& p) {
  if (!p.has_query_start_loc()) return;
  const std::vector<std::int32_t>& loc = p.query_start_loc;
  require(loc.size() == p.seq_lens.size() + 1, "query_start_loc", [&] {
    return "must hold batch + 1 = " + std::to_string(p.seq_lens.size() + 1) +
           " prefix sums of the requests' query token counts" +
           got(static_cast<std::int64_t>(loc.size()));
  });
  require(loc[0] == 0, "query_start_loc", [&] { return "must start at 0" + got(loc[0]); });
  for (std::size_t b = 0; b + 1 < loc.size(); ++b) {
    const std::int64_t n = static_cast<std::int64_t>(loc[b + 1]) - loc[b];
    require(n >= 0 && n <= p.q_len, "query_start_loc", [&] {
      return "must not decrease, and no request may have more than q_len = " +
             std::to_string(p.q_len) + " query tokens (q_len bounds them), but query_start_loc[" +
             std::to_string(b + 1) + "] - query_start_loc[" + std::to_string(b) +
             "] = " + std::to_string(n);
    });
  }
}

}  // namespace

std::string_view kv_scales_name(KvScales scales) {
  switch (scales) {
    case KvScales::none:
      return "none";
    case KvScales::per_tensor:
      return "per_tensor";
    case KvScales::per_kv_head:
      return "per_kv_head";
    case KvScales::per_token_head:
      return "per_token_head";
  }
  return "?";
}

KvScales parse_kv_scales(std::string_view text, const char* argument) {
  for (KvScales s :
       {KvScales::none, KvScales::per_tensor, KvScales::per_kv_head, KvScales::per_token_head}) {
    if (text == kv_scales_name(s)) return s;
  }
  throw Error(argument, "must be one of none, per_tensor, per_kv_head, per_token_head (got '" +
                            std::string(text) + "')");
}

std::string kv_dtypes_name(const DecodeProblem& p) {
  std::string name(dtype_name(p.kv_dtype));
  if (p.value_dtype() != p.kv_dtype) name += "/" + std::string(dtype_name(p.value_dtype()));
  return name;
}

float DecodeProblem::softmax_scale() const {
  if (mutated(Mutation::scale_one_over_d) && scale == 0.0f)
    return 1.0f / static_cast<float>(head_dim);
  return scale != 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

std::int64_t DecodeProblem::total_tokens() const {
  std::int64_t total = 0;
  for (std::int32_t len : seq_lens) total += len;
  return total;
}

std::int64_t DecodeProblem::total_queries() const {
  if (has_query_start_loc()) return query_start_loc.back();
  return static_cast<std::int64_t>(batch()) * q_len;
}

std::int64_t DecodeProblem::kv_bytes(bool shared_kv) const {
  std::int64_t read = 0;  // keys some query row sees: a window starts them after 0
  for (std::int32_t b = 0; b < batch(); ++b) {
    const std::int32_t len = seq_lens[static_cast<std::size_t>(b)], n = query_len(b);
    if (n > 0) read += len - first_planned_key(len, n, variant.window_left);
  }
  // Per-token scales are read beside the cache: one float per token, KV head, K and V.
  const std::int64_t scales = kv_scales == KvScales::per_token_head ? 4 : 0;
  const DType v = value_dtype();
  const std::int64_t k_row =
      row_units(kv_dtype, head_dim) * static_cast<std::int64_t>(dtype_size(kv_dtype)) + scales;
  const std::int64_t v_row =
      row_units(v, value_dim()) * static_cast<std::int64_t>(dtype_size(v)) + scales;
  return read * kv_heads * (shared_kv ? k_row : k_row + v_row);
}

void validate(const DecodeProblem& p) {
  require(p.kv_heads >= 1 && p.kv_heads <= kMaxHeads, "kv_heads",
          [&] { return "must be in [1, " + std::to_string(kMaxHeads) + "]" + got(p.kv_heads); });
  require(p.q_heads >= 1 && p.q_heads <= kMaxHeads, "q_heads",
          [&] { return "must be in [1, " + std::to_string(kMaxHeads) + "]" + got(p.q_heads); });
  require(p.q_heads % p.kv_heads == 0, "q_heads", [&] {
    return "must be a multiple of kv_heads = " + std::to_string(p.kv_heads) + got(p.q_heads);
  });
  require(p.head_dim >= kHeadDimMultiple && p.head_dim <= kMaxHeadDim &&
              p.head_dim % kHeadDimMultiple == 0,
          "head_dim", [&] {
            return "must be a multiple of " + std::to_string(kHeadDimMultiple) + " in [" +
                   std::to_string(kHeadDimMultiple) + ", " + std::to_string(kMaxHeadDim) + "]" +
                   got(p.head_dim);
          });
  require(p.head_dim_v == 0 || (p.head_dim_v >= kHeadDimMultiple && p.head_dim_v <= p.head_dim &&
                                p.head_dim_v % kHeadDimMultiple == 0),
          "head_dim_v", [&] {
            return "must be 0 (V as wide as K) or a multiple of " +
                   std::to_string(kHeadDimMultiple) + " in [" + std::to_string(kHeadDimMultiple) +
                   ", head_dim = " + std::to_string(p.head_dim) + "]" + got(p.head_dim_v);
          });
  require(p.q_len >= 1 && p.q_len <= kMaxQLen, "q_len",
          [&] { return "must be in [1, " + std::to_string(kMaxQLen) + "]" + got(p.q_len); });
  require(!p.seq_lens.empty() && p.seq_lens.size() <= static_cast<std::size_t>(kMaxBatch),
          "seq_lens", [&] {
            return "must hold one length per request, 1 to " + std::to_string(kMaxBatch) +
                   " requests" + got(static_cast<std::int64_t>(p.seq_lens.size()));
          });
  validate_query_start_loc(p);
  for (std::size_t b = 0; b < p.seq_lens.size(); ++b) {
    require(p.seq_lens[b] >= 0, "seq_lens", [&] {
      return "must be >= 0, but seq_lens[" + std::to_string(b) +
             "] = " + std::to_string(p.seq_lens[b]);
    });
    const std::int32_t n = p.query_len(static_cast<std::int32_t>(b));
    require(p.seq_lens[b] == 0 || p.seq_lens[b] >= n, "seq_lens", [&] {
      const std::string name = p.has_query_start_loc()
                                   ? "request " + std::to_string(b) + "'s query token count "
                                   : std::string("q_len = ");
      return "must be 0 or >= " + name + std::to_string(n) +
             " (the new tokens are the last keys), but seq_lens[" + std::to_string(b) +
             "] = " + std::to_string(p.seq_lens[b]);
    });
  }
  require(p.variant.window_left >= -1, "window_left",
          [&] { return "must be >= 0, or -1 for no window" + got(p.variant.window_left); });
  require(std::isfinite(p.variant.softcap) && p.variant.softcap >= 0.0f, "softcap", [&] {
    return "must be finite and >= 0 (0 means off) (got " + std::to_string(p.variant.softcap) + ")";
  });
  require(std::isfinite(p.scale) && p.scale >= 0.0f, "scale", [&] {
    return "must be finite and >= 0 (0 means 1/sqrt(head_dim)) (got " + std::to_string(p.scale) +
           ")";
  });
  if (p.v_dtype && *p.v_dtype != p.kv_dtype) {  // the pairs llama.cpp's -ctk / -ctv make
    auto mixable = [](DType t) { return t == DType::f16 || is_block_format(t); };
    require(mixable(*p.v_dtype) && mixable(p.kv_dtype), "v_dtype", [&] {
      return "may differ from kv_dtype only with both f16, q8_0 or q4_0 (got kv_dtype " +
             std::string(dtype_name(p.kv_dtype)) + ", v_dtype " +
             std::string(dtype_name(*p.v_dtype)) + ")";
    });
  }
  for (const DType t : {p.kv_dtype, p.value_dtype()}) {
    require(!is_block_format(t) || p.head_dim % kBlockValues == 0, "head_dim", [&] {
      return "must be a multiple of " + std::to_string(kBlockValues) + " for the block format " +
             std::string(dtype_name(t)) + " (a block never straddles heads)" + got(p.head_dim);
    });
  }
  require(!is_block_format(p.value_dtype()) || p.value_dim() % kBlockValues == 0, "head_dim_v",
          [&] {
            return "must be a multiple of " + std::to_string(kBlockValues) +
                   " for the block format " + std::string(dtype_name(p.value_dtype())) +
                   " (a block never straddles heads)" + got(p.head_dim_v);
          });
  require(!is_kv_only(p.bias_dtype), "bias_dtype", [&] {
    return "must be f32, f16 or bf16 (got " + std::string(dtype_name(p.bias_dtype)) + ")";
  });
  require(!is_kv_only(p.q_dtype), "q_dtype", [&] {
    return "must be f32, f16 or bf16 (8-bit types and block formats are for the KV cache only) "
           "(got " +
           std::string(dtype_name(p.q_dtype)) + ")";
  });
  require((p.kv_scales != KvScales::none) == is_quantized(p.kv_dtype), "kv_scales", [&] {
    return is_quantized(p.kv_dtype)
               ? "must be per_tensor, per_kv_head or per_token_head for the 8-bit kv_dtype " +
                     std::string(dtype_name(p.kv_dtype)) + " (got none)"
               : "must be none for the kv_dtype " + std::string(dtype_name(p.kv_dtype)) +
                     (is_block_format(p.kv_dtype) ? " (its scales are inside its blocks)" : "");
  });
  if (p.layout == KvLayout::contiguous) {
    require(p.capacity >= 0, "capacity", [&] { return "must be >= 0" + got(p.capacity); });
    for (std::size_t b = 0; b < p.seq_lens.size(); ++b) {
      require(p.seq_lens[b] <= p.capacity, "seq_lens", [&] {
        return "must be <= capacity = " + std::to_string(p.capacity) + ", but seq_lens[" +
               std::to_string(b) + "] = " + std::to_string(p.seq_lens[b]);
      });
    }
  } else {
    require(p.page_size >= 1, "page_size", [&] { return "must be >= 1" + got(p.page_size); });
    require(p.num_pages >= 1, "num_pages", [&] { return "must be >= 1" + got(p.num_pages); });
    require(p.max_pages >= 1, "max_pages",
            [&] { return "must be >= 1 (block_table columns)" + got(p.max_pages); });
    for (std::size_t b = 0; b < p.seq_lens.size(); ++b) {
      const std::int64_t need = pages_for(p.seq_lens[b], p.page_size);
      require(need <= p.max_pages, "seq_lens", [&] {
        return "must fit in max_pages x page_size = " + std::to_string(p.max_pages) + " x " +
               std::to_string(p.page_size) + " tokens, but seq_lens[" + std::to_string(b) +
               "] = " + std::to_string(p.seq_lens[b]);
      });
    }
  }
}

}  // namespace leanattn
