// The llama.cpp backend's load-time version policy
// (integrations/llama.cpp/ggml_version_policy.hpp): which pairs of ggml versions (the backend's
// build, the process's) load, and that every refusal names both versions, both commits and the
// rebuild command.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ggml_version_policy.hpp"

namespace leanattn::llama_cpp {
namespace {

const GgmlBuild kPinned = {"0.25.3", "0c1e570-dirty"};
const GgmlBuild kAdjacent = {"0.20.0", "4df29be-dirty"};
const GgmlBuild kOlder = {"0.15.1", "e3a74b2-dirty"};
const GgmlBuild kUntested = {"0.26.0", "abcdef1"};

void expect_names_both(const std::string& message, const GgmlBuild& built,
                       const GgmlBuild& running) {
  EXPECT_NE(message.find("built for ggml " + built.version + " (commit " + built.commit + ")"),
            std::string::npos)
      << message;
  EXPECT_NE(
      message.find("loaded into ggml " + running.version + " (commit " + running.commit + ")"),
      std::string::npos)
      << message;
}

void expect_refusal(const LoadDecision& d, const GgmlBuild& built, const GgmlBuild& running) {
  EXPECT_FALSE(d.load);
  expect_names_both(d.message, built, running);
  EXPECT_NE(d.message.find("not loaded"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find(rebuild_command()), std::string::npos) << d.message;
  EXPECT_NE(rebuild_command().find("-DLEANATTN_LLAMA_CPP="), std::string::npos);
  EXPECT_NE(rebuild_command().find("--target ggml-leanattn"), std::string::npos);
}

TEST(VersionPolicy, TheBuildsOwnGgmlLoadsSilently) {
  const LoadDecision d = decide_load(kPinned, kPinned, false);
  EXPECT_TRUE(d.load);
  EXPECT_EQ(d.message, "");
}

TEST(VersionPolicy, TheSameVersionLoadsWhateverTheCommit) {
  // A release tarball reports "unknown"; a git checkout names the commit without "-dirty".
  for (const char* commit : {"unknown", "0c1e570"}) {
    const GgmlBuild running = {kPinned.version, commit};
    const LoadDecision d = decide_load(kPinned, running, false);
    EXPECT_TRUE(d.load);
    expect_names_both(d.message, kPinned, running);
  }
  const LoadDecision d = decide_load(kUntested, {kUntested.version, "unknown"}, false);
  EXPECT_TRUE(d.load) << d.message;
}

TEST(VersionPolicy, TestedVersionsLoadIntoEachOther) {
  for (const GgmlBuild& built : {kPinned, kAdjacent, kOlder}) {
    for (const GgmlBuild& running : {kPinned, kAdjacent, kOlder}) {
      const LoadDecision d = decide_load(built, running, false);
      EXPECT_TRUE(d.load) << d.message;
      if (built.version != running.version) {
        expect_names_both(d.message, built, running);
        EXPECT_NE(d.message.find("tested together"), std::string::npos) << d.message;
      }
    }
  }
}

TEST(VersionPolicy, UntestedPairsAreRefusedNamingBothVersions) {
  for (const auto& [built, running] : {std::pair{kPinned, kUntested}, std::pair{kUntested, kPinned},
                                       std::pair{kUntested, GgmlBuild{"0.9.0", "unknown"}}}) {
    const LoadDecision d = decide_load(built, running, false);
    expect_refusal(d, built, running);
    EXPECT_NE(d.message.find("LEANATTN_GGML_ANY_VERSION=1"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("0.15.1, 0.20.0, 0.25.3"), std::string::npos) << d.message;
  }
}

TEST(VersionPolicy, TheOverrideLoadsUntestedPairsAndSaysSo) {
  const LoadDecision d = decide_load(kPinned, kUntested, true);
  EXPECT_TRUE(d.load);
  expect_names_both(d.message, kPinned, kUntested);
  EXPECT_NE(d.message.find("LEANATTN_GGML_ANY_VERSION=1"), std::string::npos) << d.message;
}

TEST(VersionPolicy, RenumberedOpsAreRefusedEvenWithTheOverride) {
  const std::string why = "op 74 is FLASH_ATTN_BACK here, FLASH_ATTN_EXT in its build";
  for (const GgmlBuild& running : {kPinned, kAdjacent, kUntested}) {
    for (const bool any : {false, true}) {
      const LoadDecision d = decide_load(kPinned, running, any, why);
      expect_refusal(d, kPinned, running);
      EXPECT_NE(d.message.find(why), std::string::npos) << d.message;
    }
  }
}

}  // namespace
}  // namespace leanattn::llama_cpp
