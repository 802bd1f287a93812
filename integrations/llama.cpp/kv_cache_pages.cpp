// KvCachePages (see kv_cache_pages.hpp).
#include "kv_cache_pages.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "ggml-backend.h"
#include "ggml.h"
#include "leanattn/huge_pages.hpp"

namespace leanattn::llama_cpp {

namespace {

bool switched_off() {
  const char* env = std::getenv("LEANATTN_GGML_HUGE_PAGES");
  return env != nullptr && (std::strcmp(env, "0") == 0 || std::strcmp(env, "off") == 0);
}

}  // namespace

std::string KvCachePages::advise(const ggml_tensor* node) {
  if (switched_off()) return "";
  std::string log;
  for (const ggml_tensor* t : {node->src[1], node->src[2]}) {
    ggml_backend_buffer_t buffer = t->view_src != nullptr ? t->view_src->buffer : t->buffer;
    if (buffer == nullptr || !seen_.insert(buffer).second) continue;
    const std::size_t size = ggml_backend_buffer_get_size(buffer);
    const HugePageAdvice a = use_huge_pages(ggml_backend_buffer_get_base(buffer), size, true);
    log += (log.empty() ? "" : "; ") + std::to_string(size >> 20) + " MiB buffer of " +
           std::string(t->name) + ": " + std::to_string(a.collapsed_bytes >> 20) +
           " MiB moved to huge pages" +
           (a.error != 0 ? " (madvise: " + std::string(std::strerror(a.error)) + ")" : "");
  }
  return log;
}

}  // namespace leanattn::llama_cpp
