// KvCachePages (see kv_cache_pages.hpp).
#include "kv_cache_pages.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ggml-backend.h"
#include "ggml.h"
#include "leanattn/huge_pages.hpp"

namespace leanattn::llama_cpp {

KvCachePages::KvCachePages() {
  const char* env = std::getenv("LEANATTN_GGML_HUGE_PAGES");
  on_ = env == nullptr || (std::strcmp(env, "0") != 0 && std::strcmp(env, "off") != 0);
}

std::string KvCachePages::advise(const ggml_tensor* node) {
  if (!on_) return "";
  std::string log;
  for (const ggml_tensor* t : {node->src[1], node->src[2]}) {
    ggml_backend_buffer_t buffer = t->view_src != nullptr ? t->view_src->buffer : t->buffer;
    if (buffer == nullptr ||
        ggml_backend_buffer_get_type(buffer) != ggml_backend_cpu_buffer_type() ||
        ggml_backend_buffer_get_usage(buffer) != GGML_BACKEND_BUFFER_USAGE_ANY) {
      continue;
    }
    void* base = ggml_backend_buffer_get_base(buffer);
    const std::size_t size = ggml_backend_buffer_get_size(buffer);
    Buffer& b = buffers_[{base, size}];
    if (b.done) continue;
    const auto start = std::chrono::steady_clock::now();
    const HugePageAdvice a = use_huge_pages(base, size, true);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // Pages already huge collapse again without error: count only what this attempt added.
    moved_ += a.collapsed_bytes > b.moved ? a.collapsed_bytes - b.moved : 0;
    b.moved = std::max(b.moved, a.collapsed_bytes);
    b.done = (a.error != EAGAIN && a.error != ENOMEM) || ++b.attempts >= kAttempts;
    log += (log.empty() ? "" : "; ") + std::to_string(size >> 20) + " MiB buffer of " +
           std::string(t->name) + ": " + std::to_string(a.collapsed_bytes >> 20) + " of " +
           std::to_string(a.advised_bytes >> 20) + " MiB moved to huge pages in " +
           std::to_string(static_cast<long>(ms)) + " ms" +
           (a.error != 0 ? " (madvise: " + std::string(std::strerror(a.error)) + ")" : "");
  }
  return log;
}

}  // namespace leanattn::llama_cpp
