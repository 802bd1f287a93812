// The install consumer's problem, inputs and run check (see consumer_runs.hpp).
#include "consumer_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

namespace consumer {

leanattn::DecodeProblem problem(leanattn::DType dtype) {
  leanattn::DecodeProblem p;
  p.q_heads = 8;
  p.kv_heads = 2;
  p.head_dim = 64;
  p.seq_lens = {300, 0, 77};
  p.capacity = 300;
  p.q_dtype = p.kv_dtype = dtype;
  return p;
}

std::vector<float> normal_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

int failed_runs(const char* what, const leanattn::reference::Output& ref, double tol,
                const Run& run) {
  int failures = 0;
  for (const auto strategy :
       {leanattn::Strategy::lean, leanattn::Strategy::split, leanattn::Strategy::head}) {
    for (std::int32_t workers = 1; workers <= 5; ++workers) {
      const Outputs got = run(strategy, workers);
      bool ok = got.out.size() == ref.out.size() && got.lse.size() == ref.lse.size();
      double err = 0.0;
      for (std::size_t i = 0; i < got.out.size() && i < ref.out.size(); ++i) {
        const double e = std::abs(got.out[i] - ref.out[i]);
        ok = ok && e <= tol;  // also false for a NaN left in place
        err = std::max(err, e);
      }
      for (std::size_t r = 0; ok && r < got.lse.size(); ++r) {
        const bool empty = std::isinf(ref.lse[r]);
        ok = empty ? std::isinf(got.lse[r]) && got.lse[r] < 0
                   : std::abs(got.lse[r] - ref.lse[r]) <= tol;
      }
      if (!ok) {
        ++failures;
        std::printf("FAIL: %s, %s on %d workers: max |out - ref| = %.3g (tolerance %.3g)\n", what,
                    std::string(leanattn::strategy_name(strategy)).c_str(), workers, err, tol);
      }
    }
  }
  std::printf("%s: %d of 15 runs (3 strategies x 1-5 workers) match the fp64 reference\n", what,
              15 - failures);
  return failures;
}

}  // namespace consumer
