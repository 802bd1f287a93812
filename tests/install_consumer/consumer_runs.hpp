// The install consumer's shared pieces: its problem and random inputs, and the check of one
// executor's runs against the package's fp64 reference. Uses the installed package's headers
// only (main.cpp, cuda_runs.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <leanattn/leanattn.hpp>
#include <vector>

namespace consumer {

// Requests of 300, 0 and 77 tokens, 8 query and 2 KV heads, head_dim 64, Q and K/V in `dtype`,
// contiguous with a capacity of 300.
leanattn::DecodeProblem problem(leanattn::DType dtype);

// `count` values drawn from N(0, 1) by a generator seeded with `seed`.
std::vector<float> normal_values(std::size_t count, unsigned seed);

// What one run wrote, as floats: out [batch, q_heads, head_dim], lse [batch, q_heads].
struct Outputs {
  std::vector<float> out;
  std::vector<float> lse;
};

// One run with `strategy` on `workers` workers, its outputs poisoned (NaN) first.
using Run = std::function<Outputs(leanattn::Strategy strategy, std::int32_t workers)>;

// Runs every strategy on 1 to 5 workers and compares each run with `ref`: every output and LSE
// within `tol` (a NaN left in place fails), an empty request's LSE -inf. Prints each failing run,
// named `what`, and returns their count.
int failed_runs(const char* what, const leanattn::reference::Output& ref, double tol,
                const Run& run);

// The "cuda" executor's part: cuda_runs.cpp in a package with the CUDA engine
// (leanattn_WITH_CUDA), no_cuda_runs.cpp otherwise. `listed`: whether executor_names() names
// "cuda". Returns the failures.
int cuda_failures(bool listed);

}  // namespace consumer
