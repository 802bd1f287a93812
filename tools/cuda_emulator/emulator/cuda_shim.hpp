// The CUDA language as host C++, force-included (-include) into every translation unit of the
// host build of the decode kernel: the qualifiers, the built-in indices, __syncthreads, warp
// shuffles and votes, atomics, fences and cache-hinted loads. Each GPU thread is a fiber of the
// emulator (cta.cpp), so a built-in reads the state of the fiber that is running; __shared__
// storage is thread_local because each CTA runs on its own OS thread (grid.cpp).
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "emulator/device_types.hpp"
#include "emulator/runtime.hpp"

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ thread_local
#define __constant__
#define __managed__
#define __align__(n) __attribute__((aligned(n)))

#define threadIdx (::leanattn::emulator::thread_idx())
#define blockIdx (::leanattn::emulator::block_idx())
#define blockDim (::leanattn::emulator::block_dim())
#define gridDim (::leanattn::emulator::grid_dim())

inline constexpr int warpSize = 32;

inline void __syncthreads(std::source_location where = std::source_location::current()) {
  ::leanattn::emulator::sync_threads(where);
}

inline void __threadfence() {
  ::leanattn::emulator::global_point();
}
inline void __threadfence_block() {}
inline void __threadfence_system() {
  ::leanattn::emulator::global_point();
}
inline void __nanosleep(unsigned) {
  ::leanattn::emulator::global_point();
}

inline unsigned __activemask() {
  return 0xffffffffu;
}
inline int __popc(unsigned x) {
  return std::popcount(x);
}
inline int __ffs(int x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1;
}
inline int __clz(int x) {
  return std::countl_zero(static_cast<unsigned>(x));
}
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<std::uint64_t>(a) * b) >> 32);
}

namespace leanattn::emulator::shim {

// One lane's part of a shuffle: its value, where the result goes, and the lane it reads.
struct ShuffleLane {
  const void* value;
  void* out;
  int size;
  int source;  // -1: keep its own value (out of the width segment)
};

inline void compute_shuffle(void* const* lanes, unsigned) {
  for (int l = 0; l < 32; ++l) {
    auto* me = static_cast<ShuffleLane*>(lanes[l]);
    if (me == nullptr) continue;
    const auto* from = me->source >= 0 ? static_cast<ShuffleLane*>(lanes[me->source]) : me;
    std::memcpy(me->out, (from != nullptr ? from : me)->value, static_cast<std::size_t>(me->size));
  }
}

template <class T>
T shuffle(unsigned mask, T value, int source, const char* op) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8));
  T out;
  ShuffleLane self{&value, &out, static_cast<int>(sizeof(T)), source};
  warp_collective(mask, op, &self, compute_shuffle);
  return out;
}

// One lane's part of a vote.
struct VoteLane {
  int predicate;
  unsigned* out;
};

inline void compute_ballot(void* const* lanes, unsigned) {
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l) {
    if (lanes[l] != nullptr && static_cast<VoteLane*>(lanes[l])->predicate != 0) bits |= 1u << l;
  }
  for (int l = 0; l < 32; ++l) {
    if (lanes[l] != nullptr) *static_cast<VoteLane*>(lanes[l])->out = bits;
  }
}

inline unsigned ballot(unsigned mask, int predicate, const char* op) {
  unsigned out = 0;
  VoteLane self{predicate, &out};
  warp_collective(mask, op, &self, compute_ballot);
  return out;
}

inline void compute_nothing(void* const*, unsigned) {}

}  // namespace leanattn::emulator::shim

// Shuffles: source lanes inside the caller's width segment, as the CUDA programming guide says.
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  const int lane = ::leanattn::emulator::lane_id();
  const int src = (lane & ~(width - 1)) + (src_lane & (width - 1));
  return ::leanattn::emulator::shim::shuffle(mask, var, src, "shfl.idx");
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  const int lane = ::leanattn::emulator::lane_id();
  const int src = lane ^ lane_mask;
  const bool inside = (src & ~(width - 1)) == (lane & ~(width - 1));
  return ::leanattn::emulator::shim::shuffle(mask, var, inside ? src : -1, "shfl.bfly");
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  const int lane = ::leanattn::emulator::lane_id();
  const int src = lane + static_cast<int>(delta);
  const bool inside = (src & ~(width - 1)) == (lane & ~(width - 1));
  return ::leanattn::emulator::shim::shuffle(mask, var, inside ? src : -1, "shfl.down");
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  const int lane = ::leanattn::emulator::lane_id();
  const int src = lane - static_cast<int>(delta);
  const bool inside = src >= 0 && (src & ~(width - 1)) == (lane & ~(width - 1));
  return ::leanattn::emulator::shim::shuffle(mask, var, inside ? src : -1, "shfl.up");
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ::leanattn::emulator::shim::ballot(mask, predicate, "vote.ballot");
}
inline int __any_sync(unsigned mask, int predicate) {
  return ::leanattn::emulator::shim::ballot(mask, predicate, "vote.any") != 0u;
}
inline int __all_sync(unsigned mask, int predicate) {
  return ::leanattn::emulator::shim::ballot(mask, predicate != 0, "vote.all") == mask;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::leanattn::emulator::warp_collective(mask, "bar.warp.sync", nullptr,
                                        ::leanattn::emulator::shim::compute_nothing);
}

// Cache-hinted loads and stores: plain accesses (the emulator has one coherent memory).
template <class T>
T __ldcg(const T* p) {
  return *p;
}
template <class T>
T __ldg(const T* p) {
  return *p;
}
template <class T>
T __ldca(const T* p) {
  return *p;
}
template <class T>
T __ldcs(const T* p) {
  return *p;
}
template <class T>
T __ldcv(const T* p) {
  return *p;
}
template <class T>
void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
void __stwb(T* p, T v) {
  *p = v;
}

// Atomics: done at once (one CTA runs at a time), then a point where other CTAs may run.
template <class T>
T __leanattn_atomic(T* p, T v, T (*op)(T, T)) {
  const T old = *p;
  *p = op(old, v);
  ::leanattn::emulator::global_point();
  return old;
}
template <class T>
T atomicAdd(T* p, T v) {
  return __leanattn_atomic<T>(p, v, [](T a, T b) { return static_cast<T>(a + b); });
}
template <class T>
T atomicSub(T* p, T v) {
  return __leanattn_atomic<T>(p, v, [](T a, T b) { return static_cast<T>(a - b); });
}
template <class T>
T atomicExch(T* p, T v) {
  return __leanattn_atomic<T>(p, v, [](T, T b) { return b; });
}
template <class T>
T atomicMax(T* p, T v) {
  return __leanattn_atomic<T>(p, v, [](T a, T b) { return a > b ? a : b; });
}
template <class T>
T atomicMin(T* p, T v) {
  return __leanattn_atomic<T>(p, v, [](T a, T b) { return a < b ? a : b; });
}
template <class T>
T atomicCAS(T* p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  ::leanattn::emulator::global_point();
  return old;
}

inline std::size_t __cvta_generic_to_shared(const void* p) {
  return ::leanattn::emulator::shared_address(p);
}
