// The constructors the executor registry (registry.cpp) calls, one per engine; each is defined
// beside its engine (src/cpu/cpu_executor.cpp, src/cuda/device/cuda_executor.cpp). Not public:
// users go through make_executor().
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "leanattn/executor.hpp"

namespace leanattn::executors {

std::unique_ptr<Executor> make_cpu_executor(const ExecutorOptions& options);
std::unique_ptr<Executor> make_cuda_executor(const ExecutorOptions& options);  // CUDA builds only
std::int32_t cuda_current_device();                                            // CUDA builds only

// `options` with what the executor `name` would make of them spelled out: a device executor's
// device -1 becomes the calling thread's current device (so that ExecutorCache keys one executor
// per device, not one for "current"). Host executors: unchanged. Throws as make_executor does
// for an unknown name.
ExecutorOptions resolved_options(std::string_view name, ExecutorOptions options);

}  // namespace leanattn::executors
