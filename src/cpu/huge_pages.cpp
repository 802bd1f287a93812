// use_huge_pages(): madvise(MADV_HUGEPAGE) and MADV_COLLAPSE on the 2 MiB-aligned interior of a
// caller's buffer (see leanattn/huge_pages.hpp).
#include "leanattn/huge_pages.hpp"

#include <cerrno>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace leanattn {

#if defined(__linux__) && defined(MADV_HUGEPAGE)
namespace {
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
#if defined(MADV_COLLAPSE)
constexpr int kMadvCollapse = MADV_COLLAPSE;
#else
constexpr int kMadvCollapse = 25;  // Linux 6.1's value, for older headers
#endif
}  // namespace

HugePageAdvice use_huge_pages(void* data, std::size_t bytes, bool collapse) {
  HugePageAdvice out;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  if (data == nullptr || bytes > UINTPTR_MAX - start || start > UINTPTR_MAX - kHugePage) return out;
  const std::uintptr_t first = (start + kHugePage - 1) / kHugePage * kHugePage;
  const std::uintptr_t last = (start + bytes) / kHugePage * kHugePage;
  if (last <= first) return out;
  const std::size_t size = last - first;
  if (madvise(reinterpret_cast<void*>(first), size, MADV_HUGEPAGE) != 0) {
    out.error = errno;
    return out;
  }
  out.advised_bytes = size;
  // One huge page at a time, so that the bytes moved are counted exactly: the kernel collapses
  // what it can and fails the rest (EINVAL before Linux 6.1 or on a region never touched, which
  // MADV_HUGEPAGE already covers at its first touch; EAGAIN / ENOMEM when memory is short).
  for (std::uintptr_t p = first; collapse && p < last; p += kHugePage) {
    if (madvise(reinterpret_cast<void*>(p), kHugePage, kMadvCollapse) == 0) {
      out.collapsed_bytes += kHugePage;
    } else if (out.error == 0) {
      out.error = errno;
    }
  }
  return out;
}
#else
HugePageAdvice use_huge_pages(void*, std::size_t, bool) {
  return {};
}
#endif

}  // namespace leanattn
