// executor_names() and make_executor(): the one place that knows which engines this build has.
// The CUDA engine is registered when it is built (LEANATTN_WITH_CUDA, set by src/CMakeLists.txt).
#include <functional>
#include <utility>

#include "executors/factories.hpp"
#include "leanattn/error.hpp"

namespace leanattn {

namespace {

using Factory = std::function<std::unique_ptr<Executor>(const ExecutorOptions&)>;

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> entries = {
    {"cpu", executors::make_cpu_executor},
#if LEANATTN_WITH_CUDA
    {"cuda", executors::make_cuda_executor},
#endif
  };
  return entries;
}

}  // namespace

std::vector<std::string> executor_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Executor> make_executor(std::string_view name, const ExecutorOptions& options) {
  for (const auto& [entry, factory] : registry()) {
    if (entry == name) return factory(options);
  }
  std::string built;
  for (const auto& [entry, factory] : registry()) built += (built.empty() ? "" : ", ") + entry;
  throw Error("backend", "must be one of the executors this build has (" + built + ") (got '" +
                             std::string(name) + "')");
}

}  // namespace leanattn
