// Deliberate bugs for the mutation check (scripts/mutation-check.sh, and for the Arm-only one
// scripts/test-arm64.sh; the list and what catches each are in docs/validation.md). A build
// configured with -DLEANATTN_MUTATIONS=ON compiles the hooks in and applies the one named by the
// environment variable LEANATTN_MUTATION at run time (none when unset). Every other build sees
// `mutated()` as the constant false, so each hook
// (`if (mutated(Mutation::...))`) folds away and the library is untouched.
#pragma once

namespace leanattn {

enum class Mutation {
  merge_without_rescale,    // CPU merge: o_a + o_b, l_a + l_b, without the exp(m - max) factors
  continuation_skips_tile,  // CPU: a partial (continuing) piece skips its first tile
  scale_one_over_d,         // DecodeProblem::softmax_scale(): 1 / d instead of 1 / sqrt(d)
  long_row_zeros,           // CPU: query head 0 of a request of >= 4096 tokens written as 0
  lse_off_by_one_tile,      // CPU: the LSE of a row of >= 2 tiles summed over one tile fewer
  gqa_head_mapping,         // CPU: query head kv_head + r * kv_heads instead of kv_head * g + r
  block_table_off_by_one,   // CPU: every paged block-table entry read as the next page
  // CPU row kernel on SVE / SVE2 only (row_kernel-inl.hpp): a dot product over an odd number of
  // vectors drops the last one, which only 16-lane (512-bit) vectors with head_dim an odd
  // multiple of 16 meet: the Arm stage's planted bug (scripts/test-arm64.sh)
  row_dot_drops_odd_vector,
};

#if defined(LEANATTN_MUTATIONS) && LEANATTN_MUTATIONS
// True when LEANATTN_MUTATION names `m`. An unknown name ends the process with the list of names.
bool mutated(Mutation m);
#else
constexpr bool mutated(Mutation) {
  return false;
}
#endif

}  // namespace leanattn
