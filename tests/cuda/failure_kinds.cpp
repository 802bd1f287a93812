// classify_rows() (see failure_kinds.hpp).
#include "failure_kinds.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace leanattn::cuda::testing {

bool FailureKinds::any() const {
  for (int i = 0; i < 2; ++i) {
    if (unwritten[i] + nan[i] + mismatch[i] > 0) return true;
  }
  return false;
}

std::string FailureKinds::summary() const {
  std::string s;
  const char* names[2] = {"split pairs", "direct pairs"};
  for (int i = 0; i < 2; ++i) {
    std::string part;
    auto add = [&](int n, const char* what) {
      if (n > 0) part += (part.empty() ? "" : ", ") + std::to_string(n) + " rows " + what;
    };
    add(unwritten[i], "never written");
    add(nan[i], "NaN");
    add(mismatch[i], "numeric mismatch");
    if (!part.empty()) s += (s.empty() ? "" : "; ") + std::string(names[i]) + ": " + part;
  }
  return s;
}

FailureKinds classify_rows(const harness::HostCase& c, const Plan& plan,
                           const reference::Output& ref, double tolerance) {
  const DecodeProblem& p = c.problem;
  std::set<std::pair<std::int32_t, std::int32_t>> split;
  for (const Reduction& r : plan.reductions) split.emplace(r.request, r.kv_head);
  const std::vector<double> got = harness::read_output(c);
  const std::size_t d = static_cast<std::size_t>(p.head_dim);
  const std::size_t row_bytes = d * dtype_size(p.q_dtype);
  const std::int32_t group = p.q_heads / p.kv_heads;
  FailureKinds k;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    for (std::int32_t h = 0; h < p.q_heads; ++h) {
      const std::size_t row = static_cast<std::size_t>(b) * p.q_heads + h;
      const int kind = split.count({b, h / group}) ? 0 : 1;
      const std::byte* bytes = c.out.data() + row * row_bytes;
      if (std::all_of(bytes, bytes + row_bytes, [](std::byte x) { return x == std::byte{0xff}; })) {
        ++k.unwritten[kind];
        continue;
      }
      bool nan = false;
      bool off = false;
      for (std::size_t i = 0; i < d; ++i) {
        const double x = got[row * d + i];
        nan = nan || std::isnan(x);
        off = off || std::abs(x - ref.out[row * d + i]) > tolerance;
      }
      if (nan) {
        ++k.nan[kind];
      } else if (off) {
        ++k.mismatch[kind];
      }
    }
  }
  return k;
}

}  // namespace leanattn::cuda::testing
