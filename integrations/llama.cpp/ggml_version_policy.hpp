// Whether the backend loads into the ggml of the process (docs/llama-cpp.md, "Version policy").
// The evidence (bench/results/llama-cpp-compat-amd-epyc-2c-2026-12-06.md, made by
// scripts/llama-cpp-compat.sh): across llama-cpp-python 0.3.30 to 0.3.36 (ggml 0.15.1 to 0.25.3,
// four months) GGML_BACKEND_API_VERSION stayed 2, and none of the layouts the backend relies on
// changed (ggml_tensor, ggml_cgraph, the ops and types it names, the interface structs it fills):
// the backend built against any of the three loaded into, and passed test-backend-ops in, the
// other two. What changed was appended (ops, types, a device capability) or a member it leaves
// null (graph_optimize's arguments). So the ggml version decides, not the commit (a release
// tarball reports "unknown"):
//   - the build's own ggml version loads, whatever the commit;
//   - a version of the tested list loads when the backend was built against one of the list too;
//   - any other pair is refused, unless LEANATTN_GGML_ANY_VERSION=1 (then loaded, and said so);
//   - never when the ops and types the backend reads are numbered differently in the process
//     (checked by name at load time): the backend would read other ops' nodes.
// ggml's loader itself refuses a backend of another GGML_BACKEND_API_VERSION.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace leanattn::llama_cpp {

// ggml versions tested together, each with the backend built against every other: the
// llama.cpp that llama-cpp-python 0.3.30 (commit e3a74b2), 0.3.35 (4df29be) and 0.3.36
// (0c1e570, the pinned one: scripts/llama-cpp.sh) vendor.
inline constexpr std::array<std::string_view, 3> kTestedGgmlVersions = {"0.15.1", "0.20.0",
                                                                        "0.25.3"};

struct GgmlBuild {
  std::string version;  // ggml_version()
  std::string commit;   // ggml_commit()
};

struct LoadDecision {
  bool load = false;
  std::string message;  // one log line without the "leanattn: " prefix; "" when nothing to say
};

// `layout_error`: "" when the process's ggml numbers the ops and types the backend reads as its
// build did, else what differs (refused even with `any_version`).
LoadDecision decide_load(const GgmlBuild& built, const GgmlBuild& running, bool any_version,
                         std::string_view layout_error = {});

// The commands that rebuild the backend against the llama.cpp of the process.
std::string rebuild_command();

}  // namespace leanattn::llama_cpp
