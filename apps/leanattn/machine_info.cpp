// machine_info(): CPU model (on aarch64: implementer and part, or that qemu-user emulates it),
// its vector features, cores, date, commit.
#include "machine_info.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "build_info.hpp"
#include "leanattn/hardware.hpp"

namespace leanattn::cli {

namespace {

// The vector features among a /proc/cpuinfo "flags" (x86) or "Features" (Arm) line.
std::string vector_flags_of(const std::string& line) {
  static const std::set<std::string> kVector = {
      "sse4_2",   "avx",      "avx2",        "fma",         "f16c",        "avx512f",
      "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
      "amx_tile", "amx_bf16", "amx_int8",    "amx_fp16",    "asimd",       "asimdhp",
      "fphp",     "asimddp",  "sve",         "sve2",        "bf16",        "i8mm"};
  std::istringstream words(line);
  std::string out;
  for (std::string w; words >> w;) {
    if (kVector.count(w) != 0) out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

}  // namespace

MachineInfo machine_info() {
  MachineInfo m;
  std::string model, implementer, part;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    const std::string value = line.substr(colon + 2);
    if (model.empty() && line.rfind("model name", 0) == 0) model = value;
    if (implementer.empty() && line.rfind("CPU implementer", 0) == 0) implementer = value;
    if (part.empty() && line.rfind("CPU part", 0) == 0) part = value;
    if (m.vector_flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) {
      m.vector_flags = vector_flags_of(value);
    }
  }
#if defined(__aarch64__)
  // A 64-bit Arm kernel names its cores by implementer and part. An x86 model name instead means
  // this aarch64 build reads an x86 host's /proc/cpuinfo: qemu-user 7.2 passes the host's through,
  // so the numbers measured here are emulated, and the label says so. (A qemu that writes an Arm
  // /proc/cpuinfo of its own, as newer versions may, is not detected.)
  if (!implementer.empty()) {
    m.cpu = "aarch64 (CPU implementer " + implementer + ", part " + part + ")";
  } else if (!model.empty()) {
    m.cpu = "aarch64 emulated (qemu-user) on " + model;
    m.vector_flags = "(emulated; the host's: " + m.vector_flags + ")";
  } else {
    m.cpu = "aarch64 (CPU unknown)";
  }
#else
  m.cpu = model.empty() ? "unknown" : model;
#endif
  m.cores = default_workers();
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.date = buf;
  m.commit = LEANATTN_GIT_COMMIT;
  return m;
}

}  // namespace leanattn::cli
