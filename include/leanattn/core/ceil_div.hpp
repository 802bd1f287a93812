// ceil_div(): the one rounding-up division of the project (tiles of a request, pages of a
// request, splits, buffer copies), host and device.
#pragma once

#include "leanattn/core/host_device.hpp"

namespace leanattn {

// ceil(a / b) for a >= 0, b >= 1.
template <class T>
LEANATTN_HOST_DEVICE constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace leanattn
