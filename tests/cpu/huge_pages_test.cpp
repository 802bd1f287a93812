// leanattn::use_huge_pages(): the 2 MiB-aligned interior of a caller's buffer is advised (the
// mapping's "hg" flag in /proc/self/smaps, on the interior only), the pages already touched on
// 4 KiB pages are collapsed into huge pages where the kernel allows it (AnonHugePages in smaps,
// not taken from the return value), and the contents stay as they were.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "leanattn/huge_pages.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace leanattn {
namespace {

constexpr std::size_t kHuge = std::size_t{2} << 20;

// A field of the /proc/self/smaps entry of the mapping that holds `p` ("AnonHugePages:",
// "VmFlags:"): the rest of its line, "" if not found.
std::string smaps_field(const void* p, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
    } else if (inside && line.rfind(field, 0) == 0) {
      return line.substr(field.size());
    }
  }
  return "";
}

long anon_huge_kib(const void* p) {
  const std::string kib = smaps_field(p, "AnonHugePages:");
  return kib.empty() ? -1 : std::stol(kib);
}

bool advised_huge(const void* p) {
  const std::string flags = smaps_field(p, "VmFlags:") + " ";
  return flags.find(" hg ") != std::string::npos;
}

std::string thp_setting() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(in, s);
  return s;
}

TEST(HugePages, AdvisesTheAlignedInteriorAndCollapsesWithoutChangingTheContents) {
  // 9 MiB starting 1 MiB into a 2 MiB-aligned block: interior [2 MiB, 10 MiB) = 8 MiB.
  const std::size_t block = 12 * (std::size_t{1} << 20);
  std::unique_ptr<std::uint8_t, decltype(&std::free)> mem(
      static_cast<std::uint8_t*>(std::aligned_alloc(kHuge, block)), &std::free);
  ASSERT_NE(mem, nullptr);
  std::uint8_t* data = mem.get() + (std::size_t{1} << 20);
  const std::size_t bytes = 9 * (std::size_t{1} << 20);
#if defined(__linux__)
  // 4 KiB pages first, whatever the THP setting, as a cache allocated without advice has.
  if (madvise(mem.get(), block, MADV_NOHUGEPAGE) != 0) GTEST_SKIP() << "no THP in this kernel";
#endif
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(i * 131 + 7);
  const long before = anon_huge_kib(mem.get() + kHuge);
  if (before < 0) GTEST_SKIP() << "no /proc/self/smaps entry for the buffer";
  ASSERT_EQ(before, 0);

  const HugePageAdvice a = use_huge_pages(data, bytes, true);
#if defined(__linux__)
  EXPECT_EQ(a.advised_bytes, 8 * (std::size_t{1} << 20)) << "errno " << a.error;
  EXPECT_TRUE(advised_huge(mem.get() + kHuge));  // the interior [2, 10) MiB
  EXPECT_TRUE(advised_huge(mem.get() + 5 * kHuge - 1));
  EXPECT_FALSE(advised_huge(mem.get()));  // the edges [0, 2) and [10, 12) MiB
  EXPECT_FALSE(advised_huge(mem.get() + 5 * kHuge));
  if (a.error == EAGAIN || a.error == ENOMEM) {
    GTEST_SKIP() << "the kernel had no huge pages to spare (errno " << a.error << ")";
  }
  if (a.error == EINVAL && a.collapsed_bytes == 0) {  // a kernel without MADV_COLLAPSE (< 6.1)
    std::cout << "no MADV_COLLAPSE here (THP: " << thp_setting() << ")\n";
  } else {
    EXPECT_EQ(a.error, 0);
    EXPECT_EQ(a.collapsed_bytes, a.advised_bytes);
    EXPECT_GE(anon_huge_kib(mem.get() + kHuge), 8 * 1024) << "THP: " << thp_setting();
  }
#else
  EXPECT_EQ(a.advised_bytes, 0u);
#endif
  for (std::size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(data[i], static_cast<std::uint8_t>(i * 131 + 7)) << "byte " << i;
  }
}

TEST(HugePages, LeavesBuffersWithoutAWholeHugePageAlone) {
  std::unique_ptr<std::uint8_t, decltype(&std::free)> mem(
      static_cast<std::uint8_t*>(std::aligned_alloc(kHuge, 2 * kHuge)), &std::free);
  ASSERT_NE(mem, nullptr);
  // 3 MiB from 1 MiB in: no aligned 2 MiB inside [1 MiB, 4 MiB) but [2, 4): advised 2 MiB;
  // 2 MiB from 1 MiB in: none.
#if defined(__linux__)
  const std::size_t expected = kHuge;
#else
  const std::size_t expected = 0;
#endif
  EXPECT_EQ(use_huge_pages(mem.get() + (1 << 20), 2 * kHuge - (1 << 20), false).advised_bytes,
            expected);
  EXPECT_EQ(use_huge_pages(mem.get() + (1 << 20), kHuge, false).advised_bytes, 0u);
  EXPECT_EQ(use_huge_pages(nullptr, 1 << 30, true).advised_bytes, 0u);
}

}  // namespace
}  // namespace leanattn
