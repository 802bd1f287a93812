// Thin wrappers over the PTX instructions the decode kernel uses (sm_80 and later): cp.async
// 16-byte (and the scales' 4-byte) copies into shared memory, fp8 pairs to floats, ldmatrix,
// mma.sync m16n8k16 with fp32 accumulators, 16-bit packing, the gpu-scope atomics and loads of the
// last-arriver merge, the SM id and global timer of the optional per-CTA trace, and programmatic
// dependent launch (the device planner before the decode kernel). Device code only; included by
// the other collective/ headers and the planner.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/common/kv8_format.hpp"
#include "leanattn/core/float8.hpp"

namespace leanattn::cuda::ptx {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte asynchronous copy global -> shared, through L2 only (.cg: K and V are streamed once).
// With valid == false nothing is read and the 16 bytes are zero-filled.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}

// 4-byte asynchronous copy global -> shared (.ca: 4-byte copies cannot bypass L1); with
// valid == false nothing is read and the 4 bytes are zero-filled.
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most `Pending` committed groups of this thread are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c[16x8] += a[16x16] b[16x8], fp32 accumulators, 16-bit inputs of type T.
template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4],
                                          std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>, "f16 or bf16");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to nearest-even T, `lo` in the low 16 bits (the lower column).
template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&h);
  }
}

template <class T>
__device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}

// Two fp8 values (`two`: the first in the low byte) as floats, exactly (the e4m3 NaN encoding
// S.1111.111 decodes to NaN with the native conversion, to +-480 with the shifts). sm_89 and
// later: cvt.rn.f16x2.e4m3x2 / e5m2x2. sm_80: the bits shifted into a half pair: an e5m2 is a
// half's top byte; an e4m3's 7 low bits under a half's exponent and mantissa give its value / 2^8
// (subnormals included), scaled back exactly in fp32.
template <Kv8Format Format>
__device__ __forceinline__ float2 fp8x2_to_float2(std::uint16_t two) {
  static_assert(Format == Kv8Format::e4m3 || Format == Kv8Format::e5m2, "fp8 formats only");
  std::uint32_t h;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (Format == Kv8Format::e4m3) {
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"(two));
  } else {
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;\n" : "=r"(h) : "h"(two));
  }
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
#else
  const std::uint32_t spread = (two & 0xffu) | ((two & 0xff00u) << 8);  // bytes 0 and 2
  if constexpr (Format == Kv8Format::e5m2) {
    h = spread << 8;
    return __half22float2(*reinterpret_cast<const __half2*>(&h));
  } else {
    h = e4m3x2_to_f16x2_bits_over_256(spread);
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
    return make_float2(f.x * 256.0f, f.y * 256.0f);
  }
#endif
}

// Arrival on a reduction's counter: acq_rel at gpu scope, so the slot this CTA wrote (made
// visible by __threadfence before) is released, and the last arriver acquires every other slot.
__device__ __forceinline__ std::uint32_t arrive(std::uint32_t* counter) {
  std::uint32_t old;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;\n"
               : "=r"(old)
               : "l"(counter)
               : "memory");
  return old;
}

// Resets a counter for the next launch (only the last arriver touches it after its arrival).
__device__ __forceinline__ void reset(std::uint32_t* counter) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], 0;\n" ::"l"(counter) : "memory");
}

// The SM this thread runs on (%smid; for the trace only: it may change under preemption).
__device__ __forceinline__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(id));
  return id;
}

// Nanoseconds of the GPU's global timer (%globaltimer; comparable across SMs).
__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// Programmatic dependent launch (sm_90 and later; nothing before): a kernel launched with
// programmatic stream serialization may start while the kernel before it on the stream still
// runs. grid_dependency_wait() returns once that kernel has completed and its writes are visible
// (at once when the launch had no such dependency); launch_dependents() lets the next such
// kernel start now (without it: when this one completes).
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace leanattn::cuda::ptx
