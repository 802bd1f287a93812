// EmulatedDevice: the CUDA engine's host path (cuda::Engine::run: validation, plan image,
// KernelParams, counter zeroing, one launch of the configuration find_kernel() picks) with the
// launch going to the CPU emulator instead of a GPU. The kernel is the unmodified source of
// src/cuda/kernel and src/cuda/collective built for the host (CMakeLists.txt). Tensors and the
// workspace are host memory. Used by the emulator's tests and `leanattn check --backend
// cuda-emulated`. No CUDA types here, so any target can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "emulator/launch.hpp"
#include "leanattn/dtype.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"
#include "leanattn/tensors.hpp"

namespace leanattn::emulator {

// One row of the configuration table, as built into the emulator.
struct KernelInfo {
  std::string name;           // e.g. "bf16_d128_wm1", "f16_kv8_d64_wm4"
  DType dtype = DType::f16;   // Q, the output and the MMA operands
  std::int32_t kv_bits = 16;  // 16: K and V in `dtype`; 8: an 8-bit cache
  std::int32_t head_dim = 0;
  std::int32_t warps_m = 0;
  std::int32_t rows = 0;
  std::int32_t block_n = 0;
  std::int32_t stages = 0;
  std::int32_t threads = 0;
  std::int32_t smem_bytes = 0;
  std::int32_t head_dim_v = 0;  // V's width (KernelHandle::head_dim_v)
  std::int32_t warps_v = 1;
  bool v_from_k = false;  // V read from K's rows (the tensors must share them)
};

// Every configuration of src/cuda/kernel_configs.cmake this build has (LEANATTN_CUDA_HEAD_DIMS:
// all of them but in the asan preset, which leaves out head_dim 256).
std::vector<KernelInfo> emulated_kernels();
// "" when a kernel exists for the problem, else the CUDA engine's reason.
std::string why_unsupported(const DecodeProblem& problem);
// The configuration the CUDA engine would launch for the problem (find_kernel()).
KernelInfo kernel_for(const DecodeProblem& problem);

struct RunOptions {
  std::uint64_t seed = 1;      // thread and CTA scheduling
  int resident = 4;            // CTAs in flight at once
  double early_landing = 0.0;  // launch.hpp
  Mutations mutations;
};

class EmulatedDevice {
 public:
  EmulatedDevice();
  ~EmulatedDevice();
  EmulatedDevice(const EmulatedDevice&) = delete;
  EmulatedDevice& operator=(const EmulatedDevice&) = delete;

  // cuda::Engine::plan() with `workers` CTAs (a GPU picks them from its occupancy).
  static Plan plan(const DecodeProblem& problem, std::int32_t workers, const PlanOptions& options);

  // The CUDA engine's workspace layout for `plan` (bytes, counters' offset).
  static WorkspaceLayout workspace_layout(const Plan& plan);

  // cuda::Engine::run() with a caller's workspace (workspace_layout(plan).bytes, kept across
  // runs): its counters are zeroed as the engine zeroes them (device_workspace.hpp).
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           void* workspace, const RunOptions& options = {});
  // With the device's own workspace, grown when a plan needs more (new memory is poisoned).
  void run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
           const RunOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leanattn::emulator
