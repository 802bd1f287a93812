// executor_names(), make_executor() and resolved_options(): the one place that knows which
// engines this build has. The CUDA engine is registered when it is built (LEANATTN_WITH_CUDA, set
// by src/CMakeLists.txt).
#include <functional>
#include <utility>

#include "executors/factories.hpp"
#include "leanattn/error.hpp"

namespace leanattn {

namespace {

struct Registered {
  std::string name;
  std::function<std::unique_ptr<Executor>(const ExecutorOptions&)> make;
  std::int32_t (*current_device)() = nullptr;  // device executors: what device -1 means now
};

const std::vector<Registered>& registry() {
  static const std::vector<Registered> entries = {
    {"cpu", executors::make_cpu_executor},
#if LEANATTN_WITH_CUDA
    {"cuda", executors::make_cuda_executor, executors::cuda_current_device},
#endif
  };
  return entries;
}

const Registered& registered(std::string_view name) {
  for (const Registered& entry : registry()) {
    if (entry.name == name) return entry;
  }
  std::string built;
  for (const Registered& entry : registry()) built += (built.empty() ? "" : ", ") + entry.name;
  throw Error("backend", "must be one of the executors this build has (" + built + ") (got '" +
                             std::string(name) + "')");
}

}  // namespace

std::vector<std::string> executor_names() {
  std::vector<std::string> names;
  for (const Registered& entry : registry()) names.push_back(entry.name);
  return names;
}

std::unique_ptr<Executor> make_executor(std::string_view name, const ExecutorOptions& options) {
  return registered(name).make(options);
}

namespace executors {

ExecutorOptions resolved_options(std::string_view name, ExecutorOptions options) {
  const Registered& entry = registered(name);
  if (entry.current_device != nullptr && options.device < 0) {
    options.device = entry.current_device();
  }
  return options;
}

}  // namespace executors

}  // namespace leanattn
