// site_matches() and call_sites() (see call_sites.hpp, launch.hpp).
#include "emulator/call_sites.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <string_view>

#include "emulator/launch.hpp"

namespace leanattn::emulator {

namespace {

struct Registry {
  std::mutex mutex;
  std::set<std::string> barriers;
  std::set<std::string> waits;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string site_name(const std::source_location& where) {
  std::string_view file = where.file_name();
  if (const auto at = file.rfind("/src/"); at != std::string_view::npos) file.remove_prefix(at + 5);
  std::string_view function = where.function_name();
  function = function.substr(0, function.find('('));
  if (const auto at = function.rfind("::"); at != std::string_view::npos) {
    function.remove_prefix(at + 2);
  }
  if (const auto at = function.rfind(' '); at != std::string_view::npos) {
    function.remove_prefix(at + 1);
  }
  return std::string(file) + ":" + std::to_string(where.line()) + " in " + std::string(function);
}

}  // namespace

bool site_matches(const std::string& name, const std::source_location& where, SiteKind kind) {
  std::string site = site_name(where);
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    (kind == SiteKind::barrier ? r.barriers : r.waits).insert(site);
  }
  return !name.empty() && name == site;
}

CallSites call_sites() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return {{r.barriers.begin(), r.barriers.end()}, {r.waits.begin(), r.waits.end()}};
}

}  // namespace leanattn::emulator

namespace leanattn::emulator {

void clear_call_sites() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.barriers.clear();
  r.waits.clear();
}

}  // namespace leanattn::emulator
