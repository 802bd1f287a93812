// allocate_large / free_large (see large_buffer.hpp).
#include "harness/large_buffer.hpp"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace leanattn {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
bool g_huge_pages = true;
}  // namespace

void set_large_buffer_huge_pages(bool huge) {
  g_huge_pages = huge;
}

void* allocate_large(std::size_t bytes, LargePages pages) {
  if (bytes == 0) return nullptr;
  const std::size_t align = bytes >= kHugePage ? kHugePage : 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where transparent huge pages are off, the buffer keeps 4 KiB pages.
  // (Before the first touch, so no collapse is needed: leanattn::use_huge_pages() does that for
  // a caller's buffer that is already filled.)
  if (align == kHugePage) {
    const bool huge = g_huge_pages || pages == LargePages::huge;
    madvise(p, rounded, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
#endif
  return p;
}

void free_large(void* p) noexcept {
  std::free(p);
}

}  // namespace leanattn
