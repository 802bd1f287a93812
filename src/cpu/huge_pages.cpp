// use_huge_pages(): madvise(MADV_HUGEPAGE) and MADV_COLLAPSE on the 2 MiB-aligned interior of a
// caller's buffer (see leanattn/huge_pages.hpp).
#include "leanattn/huge_pages.hpp"

#include <cerrno>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace leanattn {

namespace {
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
#if defined(__linux__) && !defined(MADV_COLLAPSE)
constexpr int MADV_COLLAPSE = 25;  // Linux 6.1's value, for older headers
#endif
}  // namespace

HugePageAdvice use_huge_pages(void* data, std::size_t bytes, bool collapse) {
  HugePageAdvice out;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (start + kHugePage - 1) / kHugePage * kHugePage;
  const std::uintptr_t last = (start + bytes) / kHugePage * kHugePage;
  if (data == nullptr || last <= first) return out;
  void* interior = reinterpret_cast<void*>(first);
  const std::size_t size = last - first;
  if (madvise(interior, size, MADV_HUGEPAGE) != 0) {
    out.error = errno;
    return out;
  }
  out.advised_bytes = size;
  if (collapse) {
    if (madvise(interior, size, MADV_COLLAPSE) == 0) {
      out.collapsed_bytes = size;
    } else {
      out.error = errno;  // EINVAL before Linux 6.1; EAGAIN / ENOMEM when memory is short
    }
  }
#else
  (void)data;
  (void)bytes;
  (void)collapse;
#endif
  return out;
}

}  // namespace leanattn
