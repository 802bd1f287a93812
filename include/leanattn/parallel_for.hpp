// ParallelFor: threads a caller lends the CPU engine instead of its own pool (an OpenMP team, a
// task system). Used by cpu::EngineOptions and, through the executor seam, ExecutorOptions.
#pragma once

#include <cstdint>

namespace leanattn::cpu {

// run(context, threads, job, job_context) must call job(job_context, t) once for every t in
// [0, threads), on any threads, concurrently or not, and return when all calls have returned.
// The engine's workers never wait on each other, so fewer real threads than `threads` is fine.
// Unset (run null): the engine's own pool.
struct ParallelFor {
  using Job = void (*)(void* job_context, std::int32_t thread);
  void (*run)(void* context, std::int32_t threads, Job job, void* job_context) = nullptr;
  void* context = nullptr;

  bool operator==(const ParallelFor&) const = default;  // ExecutorCache's key
};

}  // namespace leanattn::cpu
