// 64-bit sizes: caches whose element counts exceed 2^31, on the CPU engine.
//  * A paged cache of 2^31 + 2^17 elements (4 GiB of f16 per tensor, reserved but untouched except
//    for the pages the requests use) whose block tables point past element 2^31.
//  * One contiguous request of 2^24 + 4096 tokens (K alone holds more than 2^31 elements: 8 GiB
//    of K and V in f16), against the fp64 reference on its single row. Skipped under sanitizers.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <numeric>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "harness/sanitized.hpp"  // LEANATTN_SANITIZED
#include "harness/test_problem.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/reference.hpp"

namespace leanattn {
namespace {

// Anonymous mapping: pages are only backed once written.
struct Mapping {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit Mapping(std::size_t n) : bytes(n) {
    p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0);
    if (p == MAP_FAILED) p = nullptr;
  }
  ~Mapping() {
    if (p) munmap(p, bytes);
  }
};

TEST(LargeSizes, PagedCacheBeyondTwoToThe31Elements) {
  DecodeProblem p = harness::test_problem({3000, 17, 0, 700}, 4, 1, 128);
  p.layout = KvLayout::paged;
  p.page_size = 16;
  p.num_pages = (1ll << 20) + 512;  // pages of 2048 elements: 2^31 + 2^20 elements in all
  p.max_pages = 200;
  const std::int64_t page_elems = 16 * 128;
  ASSERT_GT(p.num_pages * page_elems, (1ll << 31));
  const std::size_t bytes = static_cast<std::size_t>(p.num_pages * page_elems * 2);
  Mapping k(bytes), v(bytes);
  ASSERT_NE(k.p, nullptr);
  ASSERT_NE(v.p, nullptr);
  // Requests use the last pages, in reverse order: every offset is past element 2^31.
  std::vector<std::int32_t> table(static_cast<std::size_t>(p.batch() * p.max_pages), -1);
  std::int64_t next = p.num_pages - 1;
  for (std::int32_t b = 0; b < p.batch(); ++b) {
    for (std::int32_t i = 0; i < (p.seq_lens[b] + 15) / 16; ++i) {
      table[static_cast<std::size_t>(b * p.max_pages + i)] = static_cast<std::int32_t>(next);
      harness::fill_normal(static_cast<std::byte*>(k.p) + next * page_elems * 2, DType::f16,
                           page_elems, 100 + static_cast<std::uint64_t>(next));
      harness::fill_normal(static_cast<std::byte*>(v.p) + next * page_elems * 2, DType::f16,
                           page_elems, 200 + static_cast<std::uint64_t>(next));
      --next;
    }
  }
  ASSERT_GT(next * page_elems, (1ll << 31));
  std::vector<std::byte> q(static_cast<std::size_t>(p.batch() * p.q_heads * 128 * 2));
  std::vector<std::byte> out(q.size());
  std::vector<float> lse(static_cast<std::size_t>(p.batch() * p.q_heads));
  harness::fill_normal(q.data(), DType::f16, static_cast<std::int64_t>(q.size() / 2), 7);
  const DecodeTensors t =
      dense_tensors(p, q.data(), k.p, v.p, table.data(), out.data(), lse.data());
  harness::HostCase view;  // wraps the buffers for the accuracy check
  view.problem = p;
  const auto ref = reference::naive_attention(p, t);
  cpu::Engine engine({.workers = 3});
  for (Strategy s : {Strategy::lean, Strategy::split, Strategy::head}) {
    std::fill(out.begin(), out.end(), std::byte{0xff});
    engine.run(p, engine.plan(p, {.strategy = s, .tile_tokens = 64}), t);
    view.out = out;
    view.lse = lse;
    const auto rows = harness::all_rows(p);
    const auto naive = harness::naive_same_precision(p, t, rows);
    const harness::Accuracy a = harness::check_accuracy(view, ref, true, naive, rows);
    EXPECT_TRUE(a.ok()) << strategy_name(s) << ": " << a.max_abs_err << " > " << a.tolerance << " ("
                        << a.first_problem << ")";
  }
}

TEST(LargeSizes, ContiguousRequestOfMoreThanTwoToThe31Elements) {
#ifdef LEANATTN_SANITIZED
  GTEST_SKIP() << "8 GiB case skipped under sanitizers (the paged case covers 64-bit offsets)";
#else
  const DecodeProblem p = harness::test_problem({(1 << 24) + 4096}, 1, 1, 128);
  ASSERT_GT(static_cast<std::int64_t>(p.seq_lens[0]) * 128, (1ll << 31));
  harness::HostCase c = harness::make_case(p, 11);
  const auto rows = harness::all_rows(c.problem);
  const auto ref = reference::naive_attention_rows(c.problem, c.tensors(), rows);
  const auto naive = harness::naive_same_precision(c.problem, c.tensors(), rows);
  cpu::Engine engine({.workers = 2});
  engine.decode(c.problem, c.tensors());
  const harness::Accuracy a = harness::check_accuracy(c, ref, true, naive, rows);
  EXPECT_TRUE(a.ok()) << a.max_abs_err << " > " << a.tolerance << " (" << a.first_problem << ")";
#endif
}

}  // namespace
}  // namespace leanattn
