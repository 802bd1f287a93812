// Helpers of the emulator tests: a problem for one kernel configuration, a test case with its fp64
// reference, and a run on the emulator checked with the project's accuracy policy (outputs
// poisoned first).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "emulator/emulated_device.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/naive_baseline.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::emulator {

// The 8-bit cache number `index` of the 9 (format x scale granularity) an 8-bit configuration
// reads: kv_dtype fp8_e4m3, fp8_e5m2, int8 in turn, and per tensor, per KV head, per token-head
// scales every third.
inline void use_8bit_cache(DecodeProblem& p, int index) {
  const DType types[] = {DType::fp8_e4m3, DType::fp8_e5m2, DType::int8};
  const KvScales scales[] = {KvScales::per_tensor, KvScales::per_kv_head, KvScales::per_token_head};
  p.kv_dtype = types[index % 3];
  p.kv_scales = scales[(index / 3) % 3];
}

// A problem for configuration `k` (its K and V widths); for an 8-bit one, the 8-bit cache number
// `kv8_index`.
inline DecodeProblem make_problem(std::vector<std::int32_t> lens, std::int32_t group,
                                  std::int32_t kv_heads, const KernelInfo& k, int kv8_index = 0) {
  DecodeProblem p =
      harness::test_problem(std::move(lens), group * kv_heads, kv_heads, k.head_dim, k.dtype);
  p.head_dim_v = k.head_dim_v;
  if (k.kv_bits == 8) use_8bit_cache(p, kv8_index);
  return p;
}

// The head_dim of the build's 16-bit, equal-width configurations closest to `drawn` from above
// (the largest when none is as wide): random problems are moved to a compiled row (the asan
// preset builds part of the table, docs/testing.md).
inline std::int32_t compiled_head_dim(std::int32_t drawn) {
  std::int32_t best = 0, largest = 0;
  for (const KernelInfo& k : emulated_kernels()) {
    if (k.kv_bits != 16 || k.head_dim_v != k.head_dim) continue;
    largest = std::max(largest, k.head_dim);
    if (k.head_dim >= drawn && (best == 0 || k.head_dim < best)) best = k.head_dim;
  }
  return best != 0 ? best : largest;
}

inline KernelInfo kernel_named(const std::string& name) {
  for (const KernelInfo& k : emulated_kernels()) {
    if (k.name == name) return k;
  }
  throw Error("kernel", "no emulated configuration named " + name);
}

struct Checked {
  harness::HostCase c;
  reference::Output ref;
  harness::NaiveBaseline naive;
};

// shared_kv: V is the leading head_dim_v values of K's rows (no V cache: absorbed MLA; what a
// configuration with v_from_k needs).
inline Checked checked_case(const DecodeProblem& p, std::uint64_t seed, bool shared_kv = false) {
  harness::HostCase c = harness::make_case(p, seed, shared_kv);
  auto ref = reference::naive_attention(c.problem, c.tensors());
  auto naive = harness::naive_same_precision(c.problem, c.tensors());
  return {std::move(c), std::move(ref), std::move(naive)};
}

inline std::string verdict(Checked& k) {
  const harness::Accuracy a = harness::check_accuracy(k.c, k.ref, true, &k.naive);
  if (a.ok()) return "";
  return "err " + std::to_string(a.max_abs_err) + " > tol " + std::to_string(a.tolerance) +
         ", lse err " + std::to_string(a.max_lse_err) + ", mismatches " +
         std::to_string(a.mismatches) + " (" + a.first_problem + ")";
}

// Runs the plan (the device's own workspace); "" when accurate, else why not (a failed launch,
// e.g. a deadlock, included).
inline std::string run_and_check(EmulatedDevice& device, Checked& k, const Plan& plan,
                                 const RunOptions& options = {}) {
  harness::poison_outputs(k.c);
  try {
    device.run(k.c.problem, plan, k.c.tensors(), options);
  } catch (const Error& e) {
    return std::string("threw: ") + e.what();
  }
  return verdict(k);
}

// The same with a caller's workspace.
inline std::string run_on(EmulatedDevice& device, Checked& k, const Plan& plan, void* workspace,
                          const RunOptions& options = {}) {
  harness::poison_outputs(k.c);
  try {
    device.run(k.c.problem, plan, k.c.tensors(), workspace, options);
  } catch (const Error& e) {
    return std::string("threw: ") + e.what();
  }
  return verdict(k);
}

}  // namespace leanattn::emulator
