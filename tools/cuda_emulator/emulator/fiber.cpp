// Fiber (see fiber.hpp).
#include "emulator/fiber.hpp"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>

#include "emulator/asan.hpp"

namespace leanattn::emulator {

namespace {

thread_local Fiber* running = nullptr;  // the fiber being run on this OS thread

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "cuda emulator: %s\n", what);
  std::abort();
}

}  // namespace

Fiber::Fiber(Entry entry, void* arg, std::size_t stack_bytes)
    : entry_(entry), arg_(arg), stack_bytes_(stack_bytes) {
  stack_ = mmap(nullptr, stack_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (stack_ == MAP_FAILED) fail("cannot map a fiber stack");
  if (getcontext(&context_) != 0) fail("getcontext failed");
  context_.uc_stack.ss_sp = stack_;
  context_.uc_stack.ss_size = stack_bytes_;
  context_.uc_link = nullptr;
  makecontext(&context_, &Fiber::start, 0);
}

Fiber::~Fiber() {
#if defined(LEANATTN_EMULATOR_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(stack_, stack_bytes_);  // an abandoned fiber's frames
#endif
  munmap(stack_, stack_bytes_);
}

void Fiber::start() {
  Fiber* self = running;
#if defined(LEANATTN_EMULATOR_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &self->scheduler_bottom_, &self->scheduler_size_);
#endif
  self->entry_(self->arg_);
  self->finished_ = true;
#if defined(LEANATTN_EMULATOR_ASAN)
  __sanitizer_start_switch_fiber(nullptr, self->scheduler_bottom_, self->scheduler_size_);
#endif
  setcontext(&self->scheduler_);
  fail("a finished fiber was resumed");
}

void Fiber::resume() {
  if (finished_) fail("resume of a finished fiber");
  Fiber* outer = running;
  running = this;
#if defined(LEANATTN_EMULATOR_ASAN)
  void* scheduler_fake = nullptr;
  __sanitizer_start_switch_fiber(&scheduler_fake, stack_, stack_bytes_);
#endif
  swapcontext(&scheduler_, &context_);
#if defined(LEANATTN_EMULATOR_ASAN)
  __sanitizer_finish_switch_fiber(scheduler_fake, nullptr, nullptr);
#endif
  running = outer;
}

void Fiber::yield() {
  Fiber* self = running;
  if (self == nullptr) fail("yield outside a fiber");
#if defined(LEANATTN_EMULATOR_ASAN)
  __sanitizer_start_switch_fiber(&self->fake_stack_, self->scheduler_bottom_,
                                 self->scheduler_size_);
#endif
  swapcontext(&self->context_, &self->scheduler_);
#if defined(LEANATTN_EMULATOR_ASAN)
  __sanitizer_finish_switch_fiber(self->fake_stack_, &self->scheduler_bottom_,
                                  &self->scheduler_size_);
#endif
}

}  // namespace leanattn::emulator
