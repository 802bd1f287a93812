// The install consumer: plans and runs a small ragged decode (an empty request included) on the
// CPU engine of the installed package, with every strategy on 1 to 5 workers, and checks each
// output against the package's fp64 reference. Exit status 0 when every run agrees.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <leanattn/leanattn.hpp>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

int main() {
  if (leanattn::version() != LEANATTN_EXPECTED_VERSION) {
    std::printf("FAIL: headers say %s, the package %s\n", leanattn::version().data(),
                LEANATTN_EXPECTED_VERSION);
    return 1;
  }
  leanattn::DecodeProblem p;
  p.q_heads = 8;
  p.kv_heads = 2;
  p.head_dim = 64;
  p.seq_lens = {300, 0, 77};
  p.capacity = 300;
  p.q_dtype = p.kv_dtype = leanattn::DType::f32;

  // q [batch, q_heads, head_dim]; k, v [batch, capacity, kv_heads, head_dim].
  const std::size_t rows = static_cast<std::size_t>(p.batch() * p.q_heads);
  const std::size_t d = static_cast<std::size_t>(p.head_dim);
  const std::size_t kv = static_cast<std::size_t>(p.batch() * p.capacity * p.kv_heads) * d;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> q(rows * d), k(kv), v(kv), out(rows * d), lse(rows);
  for (auto* t : {&q, &k, &v}) {
    for (float& x : *t) x = normal(rng);
  }

  const auto ref = leanattn::reference::naive_attention(
      p, leanattn::dense_tensors(p, q.data(), k.data(), v.data(), nullptr, out.data(), lse.data()));
  int failures = 0;
  for (const auto strategy :
       {leanattn::Strategy::lean, leanattn::Strategy::split, leanattn::Strategy::head}) {
    for (std::int32_t workers = 1; workers <= 5; ++workers) {
      out.assign(out.size(), std::numeric_limits<float>::quiet_NaN());  // poison
      lse.assign(lse.size(), std::numeric_limits<float>::quiet_NaN());
      leanattn::cpu::Engine engine({.workers = workers});
      const leanattn::Plan plan = engine.plan(p, {.strategy = strategy});
      engine.run(p, plan,
                 leanattn::dense_tensors(p, q.data(), k.data(), v.data(), nullptr, out.data(),
                                         lse.data()));
      double err = 0.0;
      bool ok = true;
      for (std::size_t i = 0; i < out.size(); ++i) {
        const double e = std::abs(out[i] - ref.out[i]);
        ok = ok && e <= 1e-4;  // also false for a NaN left in place
        err = std::max(err, e);
      }
      for (std::size_t r = 0; r < lse.size(); ++r) {
        const bool empty = std::isinf(ref.lse[r]);
        ok = ok &&
             (empty ? std::isinf(lse[r]) && lse[r] < 0 : std::abs(lse[r] - ref.lse[r]) <= 1e-4);
      }
      if (!ok) {
        ++failures;
        std::printf("FAIL: %s on %d workers: max |out - ref| = %.3g\n",
                    std::string(leanattn::strategy_name(strategy)).c_str(), workers, err);
      }
    }
  }
  std::printf(
      "install consumer: leanattn %s, %d of 15 runs (3 strategies x 1-5 workers) match "
      "the fp64 reference\n",
      leanattn::version().data(), 15 - failures);
  return failures == 0 ? 0 : 1;
}
