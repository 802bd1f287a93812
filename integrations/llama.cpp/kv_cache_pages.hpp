// llama.cpp's KV cache on transparent huge pages. ggml's CPU buffers come from posix_memalign
// with no madvise, so where Linux's THP setting is "madvise" (the usual default) the cache that
// every decode step reads whole sits on 4 KiB pages; leanattn's engine reads such a cache
// 1.27-1.29x slower on GQA and small-head shapes (docs/cpu-engine.md, "Huge pages"). The backend
// therefore moves each KV cache buffer that holds a taken node's K or V onto huge pages the first
// time it sees it (leanattn::use_huge_pages with MADV_COLLAPSE: contents and addresses unchanged,
// the buffer copied once by the kernel). Only ggml's CPU buffers of general use are touched (the
// KV cache's kind): weights (often a mapped file) and the scheduler's compute buffers, which it
// frees and reallocates, are left alone. LEANATTN_GGML_HUGE_PAGES=0 turns it off.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>

struct ggml_tensor;

namespace leanattn::llama_cpp {

class KvCachePages {
 public:
  KvCachePages();  // reads LEANATTN_GGML_HUGE_PAGES

  // Moves the KV cache buffers of `node`'s K and V (src[1], src[2]) onto huge pages, each once
  // (a buffer the kernel could not wholly collapse for want of memory is tried again at the next
  // nodes, kAttempts times in all);
  // returns a line for the log per buffer handled ("" when there was none).
  std::string advise(const ggml_tensor* node);

  // Bytes moved onto huge pages so far (for LEANATTN_GGML_STATS).
  std::size_t moved_bytes() const { return moved_; }

 private:
  static constexpr int kAttempts = 3;
  struct Buffer {
    std::size_t moved = 0;  // bytes on huge pages after the last attempt
    int attempts = 0;
    bool done = false;
  };
  bool on_ = true;
  std::size_t moved_ = 0;
  std::map<std::pair<const void*, std::size_t>, Buffer> buffers_;  // by (base, size)
};

}  // namespace leanattn::llama_cpp
