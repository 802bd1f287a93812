// leanattn::Error: the exception every public entry point throws for bad input. Its message names
// the argument and the rule it broke, e.g. "workers: must be >= 1 (got 0)".
// Used by the validators, the planner, the executors, the CLI and the Python bindings.
#pragma once

#include <stdexcept>
#include <string>

namespace leanattn {

class Error : public std::invalid_argument {
 public:
  // argument: the name the user knows (a C++ field, a CLI flag or a Python parameter).
  // rule: what it must satisfy, with the offending value, e.g. "must be >= 1 (got 0)".
  Error(std::string argument, std::string rule)
      : std::invalid_argument(argument + ": " + rule),
        argument_(std::move(argument)),
        rule_(std::move(rule)) {}

  const std::string& argument() const noexcept { return argument_; }
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string argument_;
  std::string rule_;
};

// Throws Error(argument, rule) when `ok` is false. The rule is only built on failure.
template <class RuleFn>
void require(bool ok, const char* argument, RuleFn&& rule) {
  if (!ok) throw Error(argument, rule());
}

}  // namespace leanattn
