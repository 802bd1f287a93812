// The emulated twin of src/cuda/collective/ptx.cuh, with the same interface: the emulator's
// include path puts shim/ before src/, so `#include "cuda/collective/ptx.cuh"` in the unmodified
// kernel source reaches this file. cp.async copies land only at the wait_group that retires their
// group (emulator/cta.cpp); ldmatrix and mma.sync are computed across the warp's 32 lanes from the
// PTX ISA's fragment tables (emulator/fragment_tables.hpp); the counter atomics are points where
// other CTAs may run. A new wrapper in the real ptx.cuh needs its twin here.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "cuda/common/kv8_format.hpp"
#include "emulator/device_types.hpp"
#include "emulator/fragment_tables.hpp"
#include "emulator/runtime.hpp"
#include "leanattn/core/float8.hpp"

#define LEANATTN_EMULATED_PTX 1

namespace leanattn::cuda::ptx {

inline std::uint32_t smem_address(const void* p) {
  return ::leanattn::emulator::shared_address(p);
}

inline void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  ::leanattn::emulator::cp_async(dst, src, 16, valid ? 16 : 0);
}

inline void cp_async_4(std::uint32_t dst, const void* src, bool valid) {
  ::leanattn::emulator::cp_async(dst, src, 4, valid ? 4 : 0);
}

inline void cp_async_commit() {
  ::leanattn::emulator::cp_async_commit();
}

template <int Pending>
inline void cp_async_wait(std::source_location where = std::source_location::current()) {
  ::leanattn::emulator::cp_async_wait(Pending, where);
}

namespace emulated {

struct LdmatrixLane {
  std::uint32_t address;
  std::uint32_t* out;
};

template <bool Trans>
void compute_ldmatrix(void* const* lanes, unsigned) {
  using ::leanattn::emulator::ldmatrix_element;
  for (int t = 0; t < 32; ++t) {
    auto* me = static_cast<LdmatrixLane*>(lanes[t]);
    for (int j = 0; j < 4; ++j) {
      std::uint32_t reg = 0;
      for (int h = 0; h < 2; ++h) {
        const auto e = ldmatrix_element(t, h, Trans);
        const auto* row = static_cast<LdmatrixLane*>(lanes[8 * j + e.row]);
        const unsigned char* p = ::leanattn::emulator::shared_pointer(row->address + 2u * e.col, 2);
        std::uint16_t x;
        std::memcpy(&x, p, 2);
        reg |= static_cast<std::uint32_t>(x) << (16 * h);
      }
      me->out[j] = reg;
    }
  }
}

template <bool Trans>
void ldmatrix(std::uint32_t (&r)[4], std::uint32_t addr) {
  LdmatrixLane self{addr, r};
  ::leanattn::emulator::warp_collective(0xffffffffu, Trans ? "ldmatrix.x4.trans" : "ldmatrix.x4",
                                        &self, compute_ldmatrix<Trans>);
}

struct MmaLane {
  float* c;
  const std::uint32_t* a;
  std::uint32_t b[2];
};

template <class T>
float to_float(std::uint32_t reg, int half) {
  const auto bits = static_cast<std::uint16_t>(reg >> (16 * half));
  if constexpr (std::is_same_v<T, __half>) {
    return ::leanattn::f16_bits_to_float(bits);
  } else {
    return ::leanattn::bf16_bits_to_float(bits);
  }
}

// D = A B + C over the warp; the products are exact in fp32, summed in k order onto C.
template <class T>
void compute_mma(void* const* lanes, unsigned) {
  using namespace ::leanattn::emulator;
  float a[16][16], b[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const auto* me = static_cast<const MmaLane*>(lanes[lane]);
    for (int i = 0; i < 4; ++i) {
      for (int h = 0; h < 2; ++h) {
        const Element e = mma_a_element(lane, i, h);
        a[e.row][e.col] = to_float<T>(me->a[i], h);
      }
    }
    for (int i = 0; i < 2; ++i) {
      for (int h = 0; h < 2; ++h) {
        const Element e = mma_b_element(lane, i, h);
        b[e.row][e.col] = to_float<T>(me->b[i], h);
      }
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    auto* me = static_cast<MmaLane*>(lanes[lane]);
    for (int c = 0; c < 4; ++c) {
      const Element e = mma_c_element(lane, c);
      float sum = 0.0f;
      for (int k = 0; k < 16; ++k) sum += a[e.row][k] * b[k][e.col];
      me->c[c] += sum;
    }
  }
}

}  // namespace emulated

inline void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  emulated::ldmatrix<false>(r, addr);
}

inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  emulated::ldmatrix<true>(r, addr);
}

template <class T>
inline void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                      std::uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "f16 or bf16");
  emulated::MmaLane self{c, a, {b0, b1}};
  ::leanattn::emulator::warp_collective(0xffffffffu,
                                        std::is_same_v<T, __half> ? "mma.f16" : "mma.bf16", &self,
                                        emulated::compute_mma<T>);
}

template <class T>
inline std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<std::uint32_t>(::leanattn::float_to_f16_bits(lo)) |
           static_cast<std::uint32_t>(::leanattn::float_to_f16_bits(hi)) << 16;
  } else {
    return static_cast<std::uint32_t>(::leanattn::float_to_bf16_bits(lo)) |
           static_cast<std::uint32_t>(::leanattn::float_to_bf16_bits(hi)) << 16;
  }
}

template <class T>
inline T from_float(float x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}

// cvt.rn.f16x2.e4m3x2 / e5m2x2 (or the shifts before sm_89): each byte's exact value, from the
// project's scalar decoders (core/float8.hpp); the e4m3 NaN encoding decodes to NaN, as cvt does.
template <::leanattn::cuda::Kv8Format Format>
inline float2 fp8x2_to_float2(std::uint16_t two) {
  using ::leanattn::cuda::Kv8Format;
  static_assert(Format == Kv8Format::e4m3 || Format == Kv8Format::e5m2, "fp8 formats only");
  const auto lo = static_cast<std::uint8_t>(two & 0xffu);
  const auto hi = static_cast<std::uint8_t>(two >> 8);
  if constexpr (Format == Kv8Format::e4m3) {
    return {::leanattn::e4m3_bits_to_float(lo), ::leanattn::e4m3_bits_to_float(hi)};
  } else {
    return {::leanattn::e5m2_bits_to_float(lo), ::leanattn::e5m2_bits_to_float(hi)};
  }
}

inline std::uint32_t arrive(std::uint32_t* counter) {
  const std::uint32_t old = *counter;
  *counter = old + 1;
  ::leanattn::emulator::global_point();
  return old;
}

inline void reset(std::uint32_t* counter) {
  *counter = 0;
  ::leanattn::emulator::global_point();
}

// %smid: the emulator's resident slot of the CTA is not an SM; the CTA index stands for it.
inline std::uint32_t sm_id() {
  return ::leanattn::emulator::block_idx().x;
}

// %globaltimer: the host's steady clock (nanoseconds), comparable across CTAs.
inline std::uint64_t global_timer_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Programmatic dependent launch: the emulator runs launches one after the other, so a kernel
// never starts before the one it depends on has completed: nothing to wait for or release.
inline void grid_dependency_wait() {}
inline void launch_dependents() {}

}  // namespace leanattn::cuda::ptx
