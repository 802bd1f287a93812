// The constructors the executor registry (registry.cpp) calls, one per engine; each is defined
// beside its engine (src/cpu/cpu_executor.cpp, src/cuda/device/cuda_executor.cpp). Not public:
// users go through make_executor().
#pragma once

#include <memory>

#include "leanattn/executor.hpp"

namespace leanattn::executors {

std::unique_ptr<Executor> make_cpu_executor(const ExecutorOptions& options);
std::unique_ptr<Executor> make_cuda_executor(const ExecutorOptions& options);  // CUDA builds only

}  // namespace leanattn::executors
