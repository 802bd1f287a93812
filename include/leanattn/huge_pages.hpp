// Transparent huge pages for a KV cache that the caller allocated. A decode step reads the whole
// cache once; on 4 KiB pages that is a TLB miss every 4 KiB (per KV head's slice of a token row,
// more often), and the CPU engine measured 1.2-1.3x slower on GQA and small-head shapes from a
// cache on 4 KiB pages than on 2 MiB ones (docs/cpu-engine.md, "Huge pages"). Where Linux's THP
// setting is "always" every large allocation gets them; where it is "madvise" (the common default
// of distributions and clouds) only memory marked with madvise() does, and an inference engine's
// cache (malloc, posix_memalign, a framework's allocator) usually is not. This marks it.
#pragma once

#include <cstddef>

namespace leanattn {

struct HugePageAdvice {
  std::size_t advised_bytes = 0;    // the 2 MiB-aligned interior marked MADV_HUGEPAGE
  std::size_t collapsed_bytes = 0;  // of which moved into huge pages now (MADV_COLLAPSE)
  int error = 0;                    // errno of the first madvise() that failed (0: none)
};

// Marks the 2 MiB-aligned interior of [data, data + bytes) for transparent huge pages: pages
// touched from now on come as huge pages. With `collapse`, the pages already touched are also
// moved into huge pages at once, one 2 MiB region at a time (MADV_COLLAPSE, Linux 6.1 and later,
// whatever the THP setting: the kernel copies them, and the memory's contents and addresses stay
// as they were); without it, khugepaged collapses them over time where THP is not "never".
// Advice only: off Linux, on a kernel without THP or for memory marked MADV_NOHUGEPAGE nothing
// changes and the result says so (advised_bytes 0, error set, or collapsed_bytes short of
// advised_bytes with the first failure's errno; regions never touched do not collapse and get
// huge pages at their first touch instead). Never throws.
HugePageAdvice use_huge_pages(void* data, std::size_t bytes, bool collapse);

}  // namespace leanattn
