// Every entry of the bad-input catalogue (tools/checks/bad_inputs.cpp) is rejected with an Error
// naming the argument and the rule, never a crash or a silent result.
#include <gtest/gtest.h>

#include "checks/bad_inputs.hpp"

namespace leanattn::checks {
// Lets GoogleTest print an entry by name (test lists and CTest names stay readable).
void PrintTo(const BadInput& b, std::ostream* os) {
  *os << b.name;
}
}  // namespace leanattn::checks

namespace leanattn {
namespace {

class BadInputTest : public ::testing::TestWithParam<checks::BadInput> {};

TEST_P(BadInputTest, IsRejectedWithItsArgumentNamed) {
  static cpu::Engine engine({.workers = 2});
  EXPECT_EQ(checks::run_bad_input(GetParam(), engine), "") << GetParam().name;
}

std::string test_name(const ::testing::TestParamInfo<checks::BadInput>& param_info) {
  std::string n;
  for (char c : param_info.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputTest, ::testing::ValuesIn(checks::bad_inputs()),
                         test_name);

}  // namespace
}  // namespace leanattn
