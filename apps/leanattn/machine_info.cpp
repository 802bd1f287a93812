// machine_info(): CPU model, cores, date, commit.
#include "machine_info.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "build_info.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::cli {

MachineInfo machine_info() {
  MachineInfo m;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  if (m.cpu.empty()) m.cpu = "unknown";
  m.cores = default_workers();
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.date = buf;
  m.commit = LEANATTN_GIT_COMMIT;
  return m;
}

}  // namespace leanattn::cli
