// llama.cpp's KV cache on transparent huge pages. ggml's CPU buffers come from posix_memalign
// with no madvise, so where Linux's THP setting is "madvise" (the usual default) the cache that
// every decode step reads whole sits on 4 KiB pages; leanattn's engine reads such a cache
// 1.2-1.3x slower on GQA and small-head shapes (docs/cpu-engine.md, "Huge pages"). The backend
// therefore moves each buffer that holds a taken node's K or V onto huge pages the first time it
// sees it (leanattn::use_huge_pages with MADV_COLLAPSE: contents and addresses unchanged; a copy
// of the buffer once, about 0.1 s per GiB). LEANATTN_GGML_HUGE_PAGES=0 turns it off.
#pragma once

#include <set>
#include <string>

struct ggml_tensor;
struct ggml_backend_buffer;

namespace leanattn::llama_cpp {

class KvCachePages {
 public:
  // Moves the buffers of `node`'s K and V (src[1], src[2]) onto huge pages, each buffer once per
  // KvCachePages; returns a line for the log per buffer handled ("" when there was none).
  std::string advise(const ggml_tensor* node);

 private:
  std::set<const ggml_backend_buffer*> seen_;
};

}  // namespace leanattn::llama_cpp
