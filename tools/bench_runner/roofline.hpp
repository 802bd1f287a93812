// The compute ceiling of the CPU kernel for a decode shape: what this machine's vector units
// allow per token x KV head, before any memory traffic, and the GB/s of K and V that this means.
// Per token x KV head the kernel must do, in vectors of `lanes` floats:
//   FMAs     2 x rows x head_dim / lanes   (q.k for every query row, then p x v), rows = q_len x
//                                          the GQA group (a mixed batch: their mean over the
//                                          tokens read);
//   widening 2 x head_dim / lanes x ops    (K and V to f32 once each: 1 op for f16 with an
//                                          instruction (F16C, AVX-512) and for bf16 (a shift),
//                                          kEmulatedF16Ops for f16 without one, 0 for f32);
// each at its cost in core cycles (VectorCosts: measured on this machine by vector_costs.hpp, or
// assumed: kVectorOpsPerCycle pipes that run FMAs and conversions alike, as on Zen 3 and the Xeon
// server cores). The softmax (one exp per score), the reductions and the loads are left out: the
// ceiling is an ideal no kernel reaches. Used by `leanattn bench` (of_roof).
#pragma once

#include <cstdint>
#include <string>

#include "leanattn/problem.hpp"

namespace leanattn::bench {

inline constexpr double kVectorOpsPerCycle = 2.0;
// f16 -> f32 from the bits with integer operations (about 19 of them over three vector ports):
// counted as 6 slots of an FMA pipe.
inline constexpr double kEmulatedF16Ops = 6.0;

struct SimdShape {
  std::int32_t f32_lanes = 1;
  bool f16_instruction = false;
  bool bf16_dot = false;  // bf16 Q . K by dot products of 2 pairs per f32 lane (AVX3_BF16)
};

// Core cycles per vector instruction of the kernel's target (per vector of its f32 lanes).
struct VectorCosts {
  double fma = 1.0 / kVectorOpsPerCycle;         // an FMA, or a bf16 dot product
  double f16_widen = 1.0 / kVectorOpsPerCycle;   // f16 -> f32 beside the FMAs
  double bf16_widen = 1.0 / kVectorOpsPerCycle;  // bf16 -> f32 beside the FMAs
  double int_op = 1.0 / kVectorOpsPerCycle;      // each integer op of the 8-bit and block loaders
  bool measured = false;                         // false: the assumed costs below
  std::string source = "assumed: 2 pipes for every op";  // what was measured, what assumed
};

// kVectorOpsPerCycle pipes for every op; f16 without an instruction kEmulatedF16Ops slots.
VectorCosts assumed_vector_costs(SimdShape simd);

struct ComputeCeiling {
  double fma = 0.0;                  // vector FMAs (or bf16 dot products) per token x KV head
  double widen = 0.0;                // vector widening ops per token x KV head
  double cycles_per_token_head = 0;  // each op at its VectorCosts
  double bytes_per_token_head = 0;   // K's and V's rows (K's alone with V in K's rows)
  double gbps_per_core = 0.0;        // bytes / cycles x clock (0 without a clock)
};

// clock_ghz: the measured core clock (0: cycles only). shared_kv: V is read from K's rows (the
// kernel still widens it for the value product, so only the bytes change). costs: the measured
// ones (vector_costs.hpp); without them, assumed_vector_costs(simd).
ComputeCeiling compute_ceiling(const DecodeProblem& problem, SimdShape simd, double clock_ghz,
                               bool shared_kv = false, const VectorCosts* costs = nullptr);

// The SIMD shape of a CPU kernel target by name ("AVX3", "AVX2", ...).
SimdShape simd_shape(const std::string& target);

}  // namespace leanattn::bench
