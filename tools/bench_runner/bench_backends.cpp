// bench_backend_names() and make_bench_backend(): the executors `leanattn bench` can time in this
// build. The CUDA one is registered when the CUDA engine is built (LEANATTN_WITH_CUDA).
#include <utility>

#include "bench_runner/bench_backend.hpp"
#include "leanattn/error.hpp"

namespace leanattn::bench {

namespace {

using Factory = std::unique_ptr<BenchBackend> (*)();

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> entries = {
    {"cpu", make_cpu_bench_backend},
#if LEANATTN_WITH_CUDA
    {"cuda", make_cuda_bench_backend},
#endif
  };
  return entries;
}

}  // namespace

std::vector<std::string> bench_backend_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<BenchBackend> make_bench_backend(std::string_view name) {
  std::string built;
  for (const auto& [entry, factory] : registry()) {
    if (entry == name) return factory();
    built += (built.empty() ? "" : ", ") + entry;
  }
  throw Error("backend",
              "must be one of " + built + " in this build (got '" + std::string(name) + "')");
}

}  // namespace leanattn::bench
