// The load-time version policy (ggml_version_policy.hpp).
#include "ggml_version_policy.hpp"

#include <algorithm>

#ifndef LEANATTN_SOURCE_DIR
#define LEANATTN_SOURCE_DIR "."
#endif

namespace leanattn::llama_cpp {
namespace {

bool tested(std::string_view version) {
  return std::find(kTestedGgmlVersions.begin(), kTestedGgmlVersions.end(), version) !=
         kTestedGgmlVersions.end();
}

std::string tested_list() {
  std::string list;
  for (const std::string_view v : kTestedGgmlVersions) {
    list += list.empty() ? "" : ", ";
    list += v;
  }
  return list;
}

// "built for ggml 0.25.3 (commit 0c1e570-dirty), loaded into ggml 0.20.0 (commit 4df29be)"
std::string both(const GgmlBuild& built, const GgmlBuild& running) {
  return "built for ggml " + built.version + " (commit " + built.commit + "), loaded into ggml " +
         running.version + " (commit " + running.commit + ")";
}

std::string refusal(const GgmlBuild& built, const GgmlBuild& running, const std::string& why) {
  return both(built, running) + ": not loaded (" + why +
         "); rebuild it against this llama.cpp: " + rebuild_command();
}

}  // namespace

std::string rebuild_command() {
  return "cmake -S " LEANATTN_SOURCE_DIR
         " -B build/llama -DLEANATTN_LLAMA_CPP=<this llama.cpp's build folder> && cmake --build "
         "build/llama --target ggml-leanattn (docs/llama-cpp.md)";
}

LoadDecision decide_load(const GgmlBuild& built, const GgmlBuild& running, bool any_version,
                         std::string_view layout_error) {
  if (!layout_error.empty()) {
    return {false, refusal(built, running, std::string(layout_error))};
  }
  if (built.version == running.version) {
    if (built.commit == running.commit) return {true, ""};
    return {true, both(built, running) + ": the same ggml version, loaded"};
  }
  if (tested(built.version) && tested(running.version)) {
    return {true, both(built, running) + ": versions tested together, loaded"};
  }
  if (any_version) {
    return {true, both(built, running) +
                      ": not tested together, loaded because LEANATTN_GGML_ANY_VERSION=1"};
  }
  return {false, refusal(built, running,
                         "ggml versions tested together: " + tested_list() +
                             "; LEANATTN_GGML_ANY_VERSION=1 loads it anyway, untested")};
}

}  // namespace leanattn::llama_cpp
