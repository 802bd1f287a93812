// The __syncthreads and cp.async.wait_group call sites of the emulated kernel, by "file:line in
// function" (file relative to src/), recorded as they are reached; a mutation names one to drop.
#pragma once

#include <source_location>
#include <string>

namespace leanattn::emulator {

enum class SiteKind { barrier, wait };

// Records the site; true when `name` (non-empty) is this site.
bool site_matches(const std::string& name, const std::source_location& where, SiteKind kind);

}  // namespace leanattn::emulator
