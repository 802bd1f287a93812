// The 8-bit K/V formats the decode kernel reads (an 8-bit configuration of the table reads all
// three; the format is a launch argument) and their mapping from DType. Host/device; the
// conversions themselves are in collective/ptx.cuh (fp8: native cvt on sm_89 and later, bit
// shifts before) and collective/kv8_convert.cuh.
#pragma once

#include <cstdint>

#include "leanattn/dtype.hpp"

namespace leanattn::cuda {

enum class Kv8Format : std::int32_t { e4m3 = 0, e5m2 = 1, int8 = 2 };

// The format of an 8-bit kv_dtype (fp8_e4m3, fp8_e5m2, int8); e4m3 for any other (unused).
constexpr Kv8Format kv8_format(DType kv_dtype) {
  return kv_dtype == DType::fp8_e5m2 ? Kv8Format::e5m2
         : kv_dtype == DType::int8   ? Kv8Format::int8
                                     : Kv8Format::e4m3;
}

}  // namespace leanattn::cuda
