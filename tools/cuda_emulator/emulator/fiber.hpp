// Fiber: a GPU thread of the emulator, a stackful coroutine on ucontext (makecontext /
// swapcontext) that the CTA's scheduler (cta.cpp) resumes and that yields back to it at every
// barrier, warp collective and global point. Under AddressSanitizer every switch is announced
// (__sanitizer_start/finish_switch_fiber), so ASan follows the stacks.
#pragma once

#include <ucontext.h>

#include <cstddef>

namespace leanattn::emulator {

class Fiber {
 public:
  using Entry = void (*)(void* arg);

  Fiber(Entry entry, void* arg, std::size_t stack_bytes);
  ~Fiber();  // also of a fiber that never finished (its frames are abandoned)
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // From the scheduler: runs the fiber until it yields or returns.
  void resume();
  // From inside the running fiber: back to the scheduler.
  static void yield();
  bool finished() const { return finished_; }

 private:
  static void start();

  Entry entry_;
  void* arg_;
  void* stack_ = nullptr;
  std::size_t stack_bytes_;
  ucontext_t context_{};
  ucontext_t scheduler_{};
  void* fake_stack_ = nullptr;              // ASan's fake stack of the fiber while it is suspended
  const void* scheduler_bottom_ = nullptr;  // the scheduler's stack, for the switch back
  std::size_t scheduler_size_ = 0;
  bool finished_ = false;
};

}  // namespace leanattn::emulator
