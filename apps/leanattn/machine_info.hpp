// What a result file needs to say about where it was measured: CPU model, its vector features,
// core count, date and the commit of the build.
#pragma once

#include <string>

namespace leanattn::cli {

struct MachineInfo {
  std::string cpu;     // /proc/cpuinfo "model name" (aarch64: implementer and part, or "emulated")
  int cores = 0;       // hardware threads available
  std::string date;    // UTC, ISO 8601
  std::string commit;  // git describe of the build
  // The vector features of /proc/cpuinfo that decide which kernel and which ceiling apply
  // (x86: avx2, fma, f16c, avx512f, avx512_bf16, avx512_fp16, amx_*, ...; Arm: asimd, sve, ...),
  // space-separated: machines of one name differ (some expose AMX or AVX512-FP16, some not).
  std::string vector_flags;
};

MachineInfo machine_info();

}  // namespace leanattn::cli
