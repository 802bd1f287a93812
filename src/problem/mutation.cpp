// The run-time switch of the mutation build (see mutation.hpp); compiled only with
// -DLEANATTN_MUTATIONS=ON.
#include "problem/mutation.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace leanattn {

namespace {

constexpr std::array<std::string_view, 8> kNames = {
    "merge_without_rescale",  "continuation_skips_tile", "scale_one_over_d",
    "long_row_zeros",         "lse_off_by_one_tile",     "gqa_head_mapping",
    "block_table_off_by_one", "row_dot_drops_odd_vector"};

// The index of the mutation LEANATTN_MUTATION names, or -1 when unset or empty.
int selected() {
  const char* env = std::getenv("LEANATTN_MUTATION");
  if (env == nullptr || *env == '\0') return -1;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == env) return static_cast<int>(i);
  }
  std::fprintf(stderr, "LEANATTN_MUTATION=%s is not a mutation; the mutations are:", env);
  for (std::string_view n : kNames)
    std::fprintf(stderr, " %.*s", static_cast<int>(n.size()), n.data());
  std::fprintf(stderr, "\n");
  std::exit(2);
}

}  // namespace

bool mutated(Mutation m) {
  static const int active = selected();
  return active == static_cast<int>(m);
}

}  // namespace leanattn
