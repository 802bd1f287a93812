// Cta: one thread block of a launch, its GPU threads as fibers on the CTA's OS thread. The
// scheduler resumes a random runnable fiber (seeded) until it blocks: at __syncthreads (until
// every live thread has arrived), at a warp collective (until every lane of the mask has; then
// the collective is computed for all lanes at once), or at a global point (fence, atomic), where
// the grid may hand the baton to another CTA. Shared memory is poisoned (all-ones bytes: NaN in
// every float format) when the CTA starts; each thread's cp.async copies wait in its queue until
// a wait_group retires their group. Also implements runtime.hpp for the fiber that runs.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emulator/fiber.hpp"
#include "emulator/grid.hpp"
#include "emulator/launch.hpp"
#include "emulator/runtime.hpp"

namespace leanattn::emulator {

// The dynamic shared memory of the CTA on this OS thread (shared_window.cpp: the kernel's
// `extern __shared__` array, thread_local in the host build), kSharedCapacity bytes.
unsigned char* dynamic_shared_base();

class Cta {
 public:
  Cta(Grid& grid, int index, const Launch& launch);
  ~Cta();
  void run();

  // runtime.hpp, for the running thread.
  struct Thread;
  Thread& current() { return *current_; }
  const Dim3& block_index() const { return block_index_; }
  const Dim3& block_dim() const { return block_dim_; }
  const Dim3& grid_dim() const { return grid_dim_; }
  const Launch& launch() const { return launch_; }
  void sync_threads();
  void warp_collective(unsigned mask, const char* op, void* self, CollectiveFn compute);
  void global_point();
  unsigned char* shared_pointer(std::uint32_t address, int bytes);
  // Ends the launch with an error (a deadlock, lanes at different collectives, an access outside
  // shared memory): from a GPU thread it does not return; the other CTAs still run.
  void abort_launch(const std::string& what);

 private:
  static void thread_main(void* thread);
  void after_resume(Thread& t);
  void land_early(Thread& t);
  void release_barrier();
  void deadlock();

  struct Warp {
    unsigned arrived = 0;
    unsigned mask = 0;
    const char* op = nullptr;
    CollectiveFn compute = nullptr;
    void* lanes[32] = {};
  };

  Grid& grid_;
  int index_;
  const Launch& launch_;
  Dim3 block_index_, block_dim_, grid_dim_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Thread>> threads_;
  std::vector<Warp> warps_;
  std::vector<Thread*> runnable_;
  std::vector<Thread*> at_barrier_;
  int live_ = 0;
  Thread* current_ = nullptr;
  bool aborted_ = false;
  std::string error_;
};

struct Cta::Thread {
  enum class State { runnable, barrier, warp, yielded, done };
  // A queued cp.async: 16 bytes from src, or zeros (bytes = 0), into shared memory at dst.
  struct Copy {
    unsigned char* dst;
    const void* src;
    int size;       // 16 or 4 bytes
    int src_bytes;  // size, or 0: zero-fill
    int group;
  };
  Cta* cta = nullptr;
  Dim3 index;
  int linear = 0;
  State state = State::runnable;
  std::deque<Copy> copies;  // issued, not landed, in issue order
  int committed = 0;        // groups committed so far
  std::unique_ptr<Fiber> fiber;
};

// Performs a queued copy.
void land(const Cta::Thread::Copy& copy);

}  // namespace leanattn::emulator
