// The device planner's one instantiation (kernel/plan_kernel.cuh), compiled by nvcc into the CUDA
// engine and as host C++ into the emulator (tools/cuda_emulator), and its address for launches.
#include "cuda/kernel/plan_kernel.cuh"

namespace leanattn::cuda {

const void* lean_plan_kernel_address() {
  return reinterpret_cast<const void*>(&lean_plan_kernel);
}

}  // namespace leanattn::cuda
