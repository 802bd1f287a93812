// The catalogue of bad inputs every API boundary must reject with an Error that names the
// argument: each entry builds a valid problem, breaks one rule and calls the C++ API. Used by
// tests/checks/bad_inputs_test.cpp (one test per entry) and `leanattn check`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "leanattn/cpu_engine.hpp"

namespace leanattn::checks {

struct BadInput {
  std::string name;                        // what is broken, e.g. "negative length"
  std::string argument;                    // the argument the Error must name
  std::string rule;                        // words its message must contain
  std::function<void(cpu::Engine&)> call;  // must throw Error(argument, ...)
};

std::vector<BadInput> bad_inputs();

// Runs one entry: empty string when it was rejected as expected, else what went wrong.
std::string run_bad_input(const BadInput& b, cpu::Engine& engine);

}  // namespace leanattn::checks
