// The compiled decode-kernel configurations and their lookup. The configuration table is
// src/cuda/kernel_configs.cmake (the one place a configuration is added or removed); CMake
// generates from it one small .cu per row (which instantiates kernel_handle<Config>, see
// kernel/kernel_handle.cuh) and kernel_table.hpp (the same rows as a type list, read here).
// Host C++ only, no CUDA types: the engine (device/engine.cpp) asks find_kernel() for a launch
// and can_run() asks it whether one exists, so the two cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "leanattn/dtype.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::cuda {

// One row of the table: 16-bit type of Q and the output (and of the MMA operands); width of K and
// V in memory (16: the same type; 8: an 8-bit cache, any of fp8_e4m3, fp8_e5m2, int8); head_dim;
// warp rows; V's width (head_dim_v), the warps V's columns are split over, and whether V is read
// from K's rows (absorbed MLA's latent cache: v_cache = k_cache with K's strides).
template <DType Type, int KvBits, int HeadDim, int WarpsM, int HeadDimV = HeadDim, int WarpsV = 1,
          bool VFromK = false>
struct KernelConfig {
  static constexpr DType kDType = Type;
  static constexpr int kKvBits = KvBits;
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kWarpsM = WarpsM;
  static constexpr int kHeadDimV = HeadDimV;
  static constexpr int kWarpsV = WarpsV;
  static constexpr bool kVFromK = VFromK;
};

template <class... Configs>
struct ConfigList {};

// What the host needs to launch one configuration.
struct KernelHandle {
  DType dtype = DType::f16;   // Q, the output and the MMA operands
  std::int32_t kv_bits = 16;  // 16: K and V in `dtype`; 8: an 8-bit cache (its format at run time)
  std::int32_t head_dim = 0;
  std::int32_t head_dim_v = 0;  // V's width (= head_dim but for DeepSeek's shapes)
  std::int32_t warps_m = 0;
  std::int32_t warps_v = 1;  // warps V's columns are split over
  bool v_from_k = false;     // V is read from K's rows: the problem's tensors must share them
  std::int32_t rows = 0;     // query rows per pass (16 x warps_m)
  std::int32_t block_n = 0;  // tokens per pipeline stage
  std::int32_t stages = 0;
  std::int32_t threads = 0;
  std::int32_t smem_bytes = 0;      // dynamic shared memory per CTA
  std::int32_t merge_capacity = 0;  // slots x rows the last arriver's merge holds at once
  std::int32_t merge_max_rows = 0;  // rows it merges at once at most
  const void* kernel = nullptr;     // the __global__ function (for cudaLaunchKernel, occupancy)
  std::string name;  // e.g. "bf16_d128_wm1", "f16_kv8_d128_wm1", "bf16_d576_v512k_wm2_wv2"
};

// Defined in the generated instantiation files (kernel/kernel_handle.cuh).
template <class Config>
KernelHandle kernel_handle();

// Every compiled configuration, in table order.
const std::vector<KernelHandle>& compiled_kernels();

// Shared memory a kernel needs besides its dynamic part (its __shared__ flag, rounded up).
inline constexpr std::int32_t kStaticSmemBytes = 128;

// The kernel for a problem: Q and KV of the same 16-bit type (or an 8-bit cache with f16 or bf16
// Q: the kv_bits 8 rows of Q's type), a compiled pair of head_dim and head_dim_v, and among the
// configurations whose shared memory fits `smem_per_block` (a device's opt-in limit per CTA), the
// smallest warp-row count whose rows hold a pair's rows (q_len x the GQA group; the largest when
// none does: the kernel then takes several passes). Every attention variant runs
// (docs/numerics.md). Null when there is none; why_unsupported() says why ("" when supported).
// find_kernel() allocates nothing (it runs on every launch). The default limit is "any": the CPU
// emulation and device-free callers.
// A configuration that reads V from K's rows (v_from_k) runs only where the tensors share them
// (shares_kv): check_value_source() (device/kernel_arguments.hpp) refuses the others by name.
const KernelHandle* find_kernel(const DecodeProblem& problem,
                                std::int32_t smem_per_block = 1 << 30);
std::string why_unsupported(const DecodeProblem& problem, std::int32_t smem_per_block = 1 << 30);

}  // namespace leanattn::cuda
