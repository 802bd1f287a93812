// What a result file needs to say about where it was measured: CPU model, core count, date and
// the commit of the build.
#pragma once

#include <string>

namespace leanattn::cli {

struct MachineInfo {
  std::string cpu;     // /proc/cpuinfo "model name" (aarch64: implementer and part, or "emulated")
  int cores = 0;       // hardware threads available
  std::string date;    // UTC, ISO 8601
  std::string commit;  // git describe of the build
};

MachineInfo machine_info();

}  // namespace leanattn::cli
