// Cta (see cta.hpp) and the runtime.hpp entry points.
#include "emulator/cta.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "emulator/asan.hpp"
#include "emulator/call_sites.hpp"

namespace leanattn::emulator {

namespace {

thread_local Cta* running_cta = nullptr;

constexpr std::size_t kFiberStack = 256 * 1024;
constexpr std::uint32_t kSharedBias = 1u << 30;  // shared address of dynamic_shared_base()

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "cuda emulator: %s\n", what.c_str());
  std::abort();
}

Cta& cta() {
  if (running_cta == nullptr) fail("a device function was called outside an emulated launch");
  return *running_cta;
}

}  // namespace

Cta::Cta(Grid& grid, int index, const Launch& launch)
    : grid_(grid),
      index_(index),
      launch_(launch),
      rng_(launch.seed * 0x2545f4914f6cdd1dull + static_cast<std::uint64_t>(index) * 7919u + 3) {
  if (launch.threads < 1 || launch.threads > 1024) fail("threads per CTA must be in [1, 1024]");
  if (launch.smem_bytes < 0 || launch.smem_bytes > kSharedCapacity) {
    fail("dynamic shared memory over the emulator's capacity");
  }
  block_index_.x = static_cast<unsigned>(index);
  block_dim_.x = static_cast<unsigned>(launch.threads);
  grid_dim_.x = static_cast<unsigned>(launch.blocks);
  warps_.resize(static_cast<std::size_t>((launch.threads + 31) / 32));
  for (int i = 0; i < launch.threads; ++i) {
    auto t = std::make_unique<Thread>();
    t->cta = this;
    t->index.x = static_cast<unsigned>(i);
    t->linear = i;
    t->fiber = std::make_unique<Fiber>(&Cta::thread_main, t.get(), kFiberStack);
    runnable_.push_back(t.get());
    threads_.push_back(std::move(t));
  }
  live_ = launch.threads;
}

Cta::~Cta() {
#if defined(LEANATTN_EMULATOR_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(dynamic_shared_base(), kSharedCapacity);
#endif
}

void Cta::thread_main(void* thread) {
  auto* t = static_cast<Thread*>(thread);
  t->cta->launch_.body(t->cta->launch_.context);
}

void Cta::run() {
  running_cta = this;
  unsigned char* smem = dynamic_shared_base();
  std::memset(smem, 0xff, static_cast<std::size_t>(launch_.smem_bytes));
#if defined(LEANATTN_EMULATOR_ASAN)
  ASAN_POISON_MEMORY_REGION(smem + launch_.smem_bytes,
                            static_cast<std::size_t>(kSharedCapacity - launch_.smem_bytes));
#endif
  while (live_ > 0 && !aborted_) {
    if (runnable_.empty()) {
      deadlock();
      break;
    }
    const std::size_t pick = rng_() % runnable_.size();
    Thread* t = runnable_[pick];
    runnable_[pick] = runnable_.back();
    runnable_.pop_back();
    current_ = t;
    t->state = Thread::State::runnable;
    t->fiber->resume();
    current_ = nullptr;
    if (aborted_) break;
    if (t->fiber->finished()) t->state = Thread::State::done;
    if (launch_.early_landing > 0.0) land_early(*t);
    after_resume(*t);
  }
  running_cta = nullptr;
  if (aborted_) grid_.report(error_);
}

void Cta::abort_launch(const std::string& what) {
  if (error_.empty()) error_ = "CTA " + std::to_string(index_) + ": " + what;
  aborted_ = true;
  if (current_ == nullptr) return;  // the scheduler: its loop stops
  Fiber::yield();                   // a GPU thread: never resumed
  fail("an aborted fiber was resumed");
}

void Cta::after_resume(Thread& t) {
  switch (t.state) {
    case Thread::State::done:
      --live_;
      if (!at_barrier_.empty() && static_cast<int>(at_barrier_.size()) == live_) release_barrier();
      break;
    case Thread::State::barrier:
      at_barrier_.push_back(&t);
      if (static_cast<int>(at_barrier_.size()) == live_) {
        release_barrier();
        grid_.maybe_switch(index_, 0.0625);
      }
      break;
    case Thread::State::warp: {
      Warp& w = warps_[static_cast<std::size_t>(t.linear / 32)];
      if (w.arrived != w.mask) break;
      w.compute(w.lanes, w.mask);
      for (int l = 0; l < 32; ++l) {
        if ((w.mask >> l & 1u) != 0) {
          runnable_.push_back(threads_[static_cast<std::size_t>((t.linear / 32) * 32 + l)].get());
        }
      }
      w = Warp{};
      break;
    }
    case Thread::State::yielded:
      runnable_.push_back(&t);
      grid_.maybe_switch(index_, 0.5);
      break;
    case Thread::State::runnable:
      fail("a fiber returned to the scheduler without blocking");
  }
}

void Cta::land_early(Thread& t) {
  std::bernoulli_distribution now(launch_.early_landing);
  for (auto it = t.copies.begin(); it != t.copies.end();) {
    if (now(rng_)) {
      land(*it);
      it = t.copies.erase(it);
    } else {
      ++it;
    }
  }
}

void land(const Cta::Thread::Copy& copy) {
  if (copy.src_bytes == copy.size) {
    std::memcpy(copy.dst, copy.src, static_cast<std::size_t>(copy.size));
  } else {
    std::memset(copy.dst, 0, static_cast<std::size_t>(copy.size));
  }
}

void Cta::release_barrier() {
  for (Thread* t : at_barrier_) runnable_.push_back(t);
  at_barrier_.clear();
}

void Cta::deadlock() {
  std::string what = "deadlock: ";
  int barrier = 0, warp = 0;
  for (const auto& t : threads_) {
    barrier += t->state == Thread::State::barrier;
    warp += t->state == Thread::State::warp;
  }
  what += std::to_string(live_) + " live threads, " + std::to_string(barrier) +
          " at __syncthreads, " + std::to_string(warp) +
          " at a warp collective whose lanes do not all arrive";
  abort_launch(what);
}

void Cta::sync_threads() {
  current_->state = Thread::State::barrier;
  Fiber::yield();
}

void Cta::warp_collective(unsigned mask, const char* op, void* self, CollectiveFn compute) {
  Thread& t = *current_;
  const int lane = t.linear % 32;
  Warp& w = warps_[static_cast<std::size_t>(t.linear / 32)];
  if ((mask >> lane & 1u) == 0) {
    abort_launch(std::string(op) + ": the calling lane is not in the mask");
  }
  if (w.arrived == 0) {
    w.mask = mask;
    w.op = op;
    w.compute = compute;
  } else if (std::strcmp(w.op, op) != 0 || w.mask != mask) {
    abort_launch("warp " + std::to_string(t.linear / 32) +
                 ": lanes meet at different collectives (" + w.op + " and " + op + ")");
  }
  w.lanes[lane] = self;
  w.arrived |= 1u << lane;
  t.state = Thread::State::warp;
  Fiber::yield();
}

void Cta::global_point() {
  current_->state = Thread::State::yielded;
  Fiber::yield();
}

unsigned char* Cta::shared_pointer(std::uint32_t address, int bytes) {
  const std::int64_t offset = static_cast<std::int64_t>(address) - kSharedBias;
  if (offset >= 0 && offset < kSharedCapacity) {
    if (offset + bytes > launch_.smem_bytes) {
      abort_launch("shared-memory access at byte " + std::to_string(offset) +
                   " past the launch's " + std::to_string(launch_.smem_bytes) + " bytes");
    }
  }
  return dynamic_shared_base() + offset;
}

// runtime.hpp

const Dim3& thread_idx() {
  return cta().current().index;
}
const Dim3& block_idx() {
  return cta().block_index();
}
const Dim3& block_dim() {
  return cta().block_dim();
}
const Dim3& grid_dim() {
  return cta().grid_dim();
}
int lane_id() {
  return cta().current().linear % 32;
}

void sync_threads(std::source_location where) {
  Cta& c = cta();
  if (site_matches(c.launch().mutations.drop_barrier, where, SiteKind::barrier)) return;
  c.sync_threads();
}

void warp_collective(unsigned mask, const char* op, void* self, CollectiveFn compute) {
  cta().warp_collective(mask, op, self, compute);
}

void global_point() {
  cta().global_point();
}

std::uint32_t shared_address(const void* p) {
  const std::int64_t offset = static_cast<const unsigned char*>(p) -
                              static_cast<const unsigned char*>(dynamic_shared_base());
  if (offset < -static_cast<std::int64_t>(kSharedBias) || offset >= (1ll << 31)) {
    cta().abort_launch("cvta.to.shared of a pointer outside shared memory");
  }
  return static_cast<std::uint32_t>(offset + kSharedBias);
}

unsigned char* shared_pointer(std::uint32_t address, int bytes) {
  return cta().shared_pointer(address, bytes);
}

void cp_async(std::uint32_t dst, const void* src, int size, int src_bytes) {
  Cta& c = cta();
  c.current().copies.push_back(
      {c.shared_pointer(dst, size), src, size, src_bytes, c.current().committed});
}

void cp_async_commit() {
  ++cta().current().committed;
}

void cp_async_wait(int pending, std::source_location where) {
  Cta& c = cta();
  if (site_matches(c.launch().mutations.drop_wait, where, SiteKind::wait)) return;
  Cta::Thread& t = c.current();
  for (auto it = t.copies.begin(); it != t.copies.end();) {
    if (it->group < t.committed - pending) {
      land(*it);
      it = t.copies.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace leanattn::emulator
