// The CUDA toolkit's host-visible value types, for the host build of the decode kernel: the 16-bit
// float types (__half, __nv_bfloat16 and their pairs, on the project's own bit-exact conversions,
// core/float16.hpp) and the vector types (float2, float4, uint2, ...). Reached through the shim's
// cuda_fp16.h / cuda_bf16.h and force-included by cuda_shim.hpp; g++ alone builds it.
#pragma once

#include <cstdint>

#include "leanattn/core/float16.hpp"

struct __half {
  std::uint16_t bits;
};
struct __nv_bfloat16 {
  std::uint16_t bits;
};
struct alignas(4) __half2 {
  __half x, y;
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

inline __half __float2half_rn(float f) {
  return {leanattn::float_to_f16_bits(f)};
}
inline __half __float2half(float f) {
  return __float2half_rn(f);
}
inline float __half2float(__half h) {
  return leanattn::f16_bits_to_float(h.bits);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return {leanattn::float_to_bf16_bits(f)};
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  return __float2bfloat16_rn(f);
}
inline float __bfloat162float(__nv_bfloat16 h) {
  return leanattn::bf16_bits_to_float(h.bits);
}
inline __half2 __floats2half2_rn(float lo, float hi) {
  return {__float2half_rn(lo), __float2half_rn(hi)};
}
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) {
  return {__float2bfloat16_rn(lo), __float2bfloat16_rn(hi)};
}

struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct uint3 {
  unsigned x, y, z;
};

inline float2 make_float2(float x, float y) {
  return {x, y};
}
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
inline int2 make_int2(int x, int y) {
  return {x, y};
}
inline int4 make_int4(int x, int y, int z, int w) {
  return {x, y, z, w};
}
inline uint2 make_uint2(unsigned x, unsigned y) {
  return {x, y};
}
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}
