// The variants' work on a block of scores in the CPU kernel: masking (causal rows, sliding
// windows), the ALiBi bias and the caller's bias, per row, with the rules of
// core/variant_rules.hpp. The soft-cap is not applied here: every kernel target caps a whole
// block first (softcap_block, softmax_block-inl.hpp) and passes these rules without it.
// The engine fills one ScoreRules per segment; plain attention passes none, so its kernel path
// does no per-token work. Blocks that every row sees whole skip the mask test entirely.
#pragma once

#include <cstdint>
#include <limits>

#include "leanattn/core/float16.hpp"
#include "leanattn/core/variant_rules.hpp"
#include "leanattn/dtype.hpp"

namespace leanattn::cpu {

struct ScoreRules {
  const std::int64_t* key_begin = nullptr;  // [rows]: row r sees keys [key_begin[r], key_end[r])
  const std::int64_t* key_end = nullptr;    // [rows]
  const std::int64_t* position = nullptr;   // [rows]: the row's query position (ALiBi)
  const float* slope = nullptr;             // [rows]: ALiBi slope; null when off
  float softcap = 0.0f;                     // 0: off (applied by softcap_block, not below)
  const void* const* bias = nullptr;        // [rows]: the row's bias at key 0; null when off
  DType bias_dtype = DType::f32;            // f32, f16 or bf16
};

// The job's rules split for the kernel: the soft-cap, applied to a block's scores by
// softcap_block (the one place, every target), and the rest (masks, ALiBi, the caller's bias),
// applied after it by apply_score_rules. rules is null for plain attention.
struct KernelRules {
  ScoreRules rest;
  const ScoreRules* rules = nullptr;
  float cap = 0.0f;  // 0: off

  explicit KernelRules(const ScoreRules* job_rules) {
    if (job_rules == nullptr) return;
    rest = *job_rules;
    cap = rest.softcap;
    rest.softcap = 0.0f;
    rules = &rest;
  }
  KernelRules(const KernelRules&) = delete;
  KernelRules& operator=(const KernelRules&) = delete;
};

// The caller's bias of key `key` in a row that starts at `row` (DecodeTensors::bias).
inline float bias_at(const void* row, DType type, std::int64_t key) {
  switch (type) {
    case DType::f16:
      return f16_bits_to_float(static_cast<const std::uint16_t*>(row)[key]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const std::uint16_t*>(row)[key]);
    default:
      return static_cast<const float*>(row)[key];
  }
}

// Applies `rules` to S[t * stride + r] for rows r0 + r (r < R <= stride) and the keys t0 + t
// (t < tokens): invisible keys get -inf (exp gives 0), visible ones the ALiBi bias and the
// caller's bias. rules.softcap must be 0 (the kernel caps the block before).
inline void apply_score_rules(const ScoreRules& rules, std::int32_t r0, std::int32_t R,
                              std::int32_t stride, std::int64_t t0, std::int32_t tokens, float* s) {
  bool whole = true;  // every row sees every key of the block
  for (std::int32_t r = 0; r < R; ++r) {
    whole = whole && rules.key_begin[r0 + r] <= t0 && t0 + tokens <= rules.key_end[r0 + r];
  }
  if (whole && rules.slope == nullptr && rules.bias == nullptr) return;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (std::int32_t r = 0; r < R; ++r) {
    const std::int64_t b = rules.key_begin[r0 + r], e = rules.key_end[r0 + r];
    const std::int64_t pos = rules.position[r0 + r];
    const float slope = rules.slope != nullptr ? rules.slope[r0 + r] : 0.0f;
    for (std::int32_t t = 0; t < tokens; ++t) {
      float& x = s[t * stride + r];
      const std::int64_t key = t0 + t;
      if (key < b || key >= e) {
        x = neg_inf;
        continue;
      }
      if (rules.slope != nullptr) x += alibi_bias(slope, key, pos);
      if (rules.bias != nullptr) x += bias_at(rules.bias[r0 + r], rules.bias_dtype, key);
    }
  }
}

}  // namespace leanattn::cpu
