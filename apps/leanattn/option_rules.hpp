// Rules every option of every subcommand follows, applied once by main() after the subcommands
// are registered: --help shows each option's default, and a value that is another flag
// (`--seq-len --kv-heads 2`) is refused as a missing value, naming the option, instead of
// failing a number conversion.
#pragma once

#include <CLI/CLI.hpp>

namespace leanattn::cli {

void apply_option_rules(CLI::App& app);

}  // namespace leanattn::cli
