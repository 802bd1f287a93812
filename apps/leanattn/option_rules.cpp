// The rules every CLI option follows (see option_rules.hpp).
#include "option_rules.hpp"

#include <string>

namespace leanattn::cli {

namespace {

// "--seq-len --kv-heads": the option's value is missing (CLI11 would take the next flag as it).
const CLI::Validator kNotAFlag(
    [](std::string& value) -> std::string {
      if (value.size() > 2 && value.compare(0, 2, "--") == 0) {
        return "missing value (the next argument, " + value + ", is a flag)";
      }
      return "";
    },
    "", "not_a_flag");

void apply(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size() == 0) continue;  // flags take no value
    option->check(kNotAFlag);
    option->capture_default_str();  // the value before parsing, shown by --help
  }
  for (CLI::App* sub : app.get_subcommands({})) apply(*sub);
}

}  // namespace

void apply_option_rules(CLI::App& app) {
  apply(app);
}

}  // namespace leanattn::cli
