// The CUDA engine's host adapter without a GPU: the public header needs no CUDA types, the plan's
// device image round-trips (query_start_loc included), the plan cache's equality, the kernel
// argument and its alignment rules, the configuration lookup (can_run / why_not), and a clean
// answer when no device exists.
#include <gtest/gtest.h>

#include <cstring>

#include "leanattn/cuda_engine.hpp"
// The public header must not pull in the CUDA runtime (this file is compiled without its
// include path, so an #include of it would fail; a CUDA type in the header would too).
#if defined(__CUDA_RUNTIME_H__) || defined(CUDART_VERSION)
#error "leanattn/cuda_engine.hpp must not include CUDA headers"
#endif

#include "cuda/common/kernel_params.hpp"
#include "cuda/common/kv8_format.hpp"
#include "cuda/common/tile_math.hpp"
#include "cuda/device/fixed_plan.hpp"
#include "cuda/device/kernel_arguments.hpp"
#include "cuda/device/plan_cache.hpp"
#include "cuda/device/plan_image.hpp"
#include "cuda/device/workspace.hpp"
#include "cuda/kernel_registry.hpp"
#include "harness/test_problem.hpp"
#include "leanattn/error.hpp"

namespace leanattn::cuda {
namespace {

DecodeProblem problem(std::int32_t q_heads, std::int32_t kv_heads, std::int32_t d, DType t) {
  return harness::test_problem({300, 0, 77}, q_heads, kv_heads, d, t);
}

template <class T>
T read_at(const PlanImage& im, std::size_t at, std::size_t i) {
  T x;
  std::memcpy(&x, im.bytes.data() + at + i * sizeof(T), sizeof(T));
  return x;
}

void check_image(const DecodeProblem& p) {
  const Plan plan = make_plan(p, {5}, {.order = LineOrder::head_major, .tile_tokens = 32});
  ASSERT_FALSE(plan.reductions.empty());
  const PlanImage im = make_plan_image(plan);
  EXPECT_EQ(im.workers, 5);
  EXPECT_EQ(im.tile_tokens, 32);
  EXPECT_EQ(im.group_size, 4 * p.q_len);
  for (std::size_t at : {im.worker_offsets_at, im.segments_at, im.reductions_at, im.seq_lens_at}) {
    EXPECT_EQ(at % 16, 0u);
  }
  for (std::size_t w = 0; w < plan.worker_offsets.size(); ++w) {
    EXPECT_EQ(read_at<std::int32_t>(im, im.worker_offsets_at, w), plan.worker_offsets[w]);
  }
  for (std::size_t i = 0; i < plan.segments.size(); ++i) {
    const auto s = read_at<DeviceSegment>(im, im.segments_at, i);
    const Segment& want = plan.segments[i];
    EXPECT_EQ(s.request, want.request);
    EXPECT_EQ(s.kv_head, want.kv_head);
    const KeyRange t = plan.tile_keys(want.request, want.tile_begin, want.tile_end);
    EXPECT_EQ(s.token_begin, t.begin);
    EXPECT_EQ(s.token_end, t.end);
    EXPECT_EQ(s.slot, want.kind == SegmentKind::direct ? -1 : want.slot);
    EXPECT_EQ(s.reduction, want.kind == SegmentKind::direct ? -1 : want.reduction);
  }
  for (std::size_t i = 0; i < plan.reductions.size(); ++i) {
    const auto r = read_at<DeviceReduction>(im, im.reductions_at, i);
    EXPECT_EQ(r.slot_begin, plan.reductions[i].slot_begin);
    EXPECT_EQ(r.num_slots, plan.reductions[i].num_slots);
  }
  for (std::size_t b = 0; b < p.seq_lens.size(); ++b) {
    EXPECT_EQ(read_at<std::int32_t>(im, im.seq_lens_at, b), p.seq_lens[b]);
  }
}

// Plain, and with two query tokens and a window (the tiles start at the first planned key, not
// at 0: a segment's token range must come from Plan::tile_keys).
TEST(PlanImage, HoldsTheScheduleTheKernelReads) {
  DecodeProblem windowed = problem(8, 2, 128, DType::bf16);
  windowed.q_len = 2;
  windowed.variant.window_left = 70;
  for (const DecodeProblem& p : {problem(8, 2, 128, DType::bf16), windowed}) {
    check_image(p);
  }
}

// A mixed batch's per-request counts travel in the image (the kernel reads them there), and plans
// that differ only in them are different schedules (the plan cache must not reuse one for the
// other); without them the section is empty and the kernel gets null.
TEST(PlanImage, CarriesQueryStartLoc) {
  DecodeProblem p = problem(8, 2, 128, DType::bf16);
  p.q_len = 3;
  p.query_start_loc = {0, 3, 3, 4};  // counts 3, 0, 1
  const Plan plan = make_plan(p, {5}, {.order = LineOrder::head_major, .tile_tokens = 32});
  const PlanImage im = make_plan_image(plan);
  ASSERT_TRUE(im.has_query_start_loc);
  EXPECT_EQ(im.query_start_loc_at % 16, 0u);
  ASSERT_GE(im.bytes.size(), im.query_start_loc_at + 4 * 4);
  for (std::size_t b = 0; b < p.query_start_loc.size(); ++b) {
    EXPECT_EQ(read_at<std::int32_t>(im, im.query_start_loc_at, b), p.query_start_loc[b]);
  }
  DecodeProblem other = p;
  other.query_start_loc = {0, 2, 3, 4};  // counts 2, 1, 1: other rows, same lengths
  const Plan plan2 = make_plan(other, {5}, {.order = LineOrder::head_major, .tile_tokens = 32});
  EXPECT_FALSE(same_schedule(plan, plan2));
  EXPECT_NE(make_plan_image(plan).bytes, make_plan_image(plan2).bytes);
  const PlanImage plain = make_plan_image(make_plan(problem(8, 2, 128, DType::bf16), {5}, {}));
  EXPECT_FALSE(plain.has_query_start_loc);
  EXPECT_EQ(plain.query_start_loc_at, plain.bytes.size());
}

TEST(PlanImage, EqualPlansGiveEqualImagesAndOthersDiffer) {
  const DecodeProblem p = problem(8, 2, 128, DType::bf16);
  const Plan a = make_plan(p, {5}, {.order = LineOrder::head_major});
  const Plan b = make_plan(p, {5}, {.order = LineOrder::head_major});
  const Plan c = make_plan(p, {6}, {.order = LineOrder::head_major});
  const Plan d = make_plan(p, {5}, {.strategy = Strategy::split});
  EXPECT_EQ(make_plan_image(a).bytes, make_plan_image(b).bytes);
  EXPECT_EQ(image_hash(make_plan_image(a)), image_hash(make_plan_image(b)));
  EXPECT_NE(make_plan_image(a).bytes, make_plan_image(c).bytes);
  EXPECT_TRUE(same_schedule(a, b));
  EXPECT_FALSE(same_schedule(a, c));
  EXPECT_FALSE(same_schedule(a, d));
}

TEST(KernelArguments, PointIntoTheWorkspaceLayoutAndCarryTheProblem) {
  DecodeProblem p = problem(8, 2, 64, DType::f16);
  p.layout = KvLayout::paged;
  p.page_size = 48;
  p.max_pages = 7;
  p.num_pages = 20;
  const Plan plan = make_plan(p, {7}, {.order = LineOrder::head_major, .tile_tokens = 16});
  alignas(16) static std::byte ws[1 << 20];
  const WorkspaceLayout w = device_workspace_layout(plan);
  ASSERT_LE(w.bytes, static_cast<std::int64_t>(sizeof ws));
  std::int32_t table[21] = {};
  DecodeTensors t = dense_tensors(p, ws, ws, ws, table, ws, nullptr);
  const KernelParams k = make_kernel_params(p, t, plan, DevicePlan{}, ws);
  EXPECT_EQ(reinterpret_cast<std::byte*>(k.slot_o), ws + w.o_offset);
  EXPECT_EQ(reinterpret_cast<std::byte*>(k.slot_m), ws + w.m_offset);
  EXPECT_EQ(reinterpret_cast<std::byte*>(k.slot_l), ws + w.l_offset);
  EXPECT_EQ(reinterpret_cast<std::byte*>(k.counters), ws + w.counters_offset);
  EXPECT_EQ(k.group_size, 4);
  EXPECT_EQ(k.tile_tokens, 16);
  EXPECT_FLOAT_EQ(k.scale, 0.125f);
  EXPECT_EQ(k.k.page_size, 48);
  EXPECT_EQ(k.page.divisor, 48u);
  EXPECT_EQ(k.k.block_table, table);
  EXPECT_EQ(k.k.token_stride, 2 * 64);
  EXPECT_EQ(k.k.outer_stride, 48 * 2 * 64);
  EXPECT_EQ(k.lse, nullptr);
  EXPECT_EQ(k.heads, 4);
  EXPECT_EQ(k.q_len, 1);
  EXPECT_EQ(k.window_left, -1);
  EXPECT_EQ(k.sinks, nullptr);
  EXPECT_EQ(k.alibi_slopes, nullptr);
}

// The variant reaches the kernel: rows per pair = q_len x heads, token strides, the settings, and
// the per-head arrays exactly when the variant uses them.
TEST(KernelArguments, CarryTheVariant) {
  DecodeProblem p = problem(8, 2, 64, DType::f16);
  p.q_len = 3;
  p.seq_lens = {300, 0, 77};
  p.variant = {.causal = false, .window_left = 9, .softcap = 2.5f, .sinks = true, .alibi = true};
  const Plan plan = make_plan(p, {7}, {.order = LineOrder::head_major, .tile_tokens = 16});
  alignas(16) static std::byte ws[1 << 21];
  ASSERT_LE(device_workspace_layout(plan).bytes, static_cast<std::int64_t>(sizeof ws));
  float sinks[8] = {};
  float slopes[8] = {};
  DecodeTensors t = dense_tensors(p, ws, ws, ws, nullptr, ws, nullptr);
  t.sinks = sinks;
  t.alibi_slopes = slopes;
  KernelParams k = make_kernel_params(p, t, plan, DevicePlan{}, ws);
  EXPECT_EQ(k.group_size, 12);
  EXPECT_EQ(k.heads, 4);
  EXPECT_EQ(k.q_len, 3);
  EXPECT_EQ(k.q_stride_token, 8 * 64);
  EXPECT_EQ(k.q_stride_batch, 3 * 8 * 64);
  EXPECT_EQ(k.out_stride_token, 8 * 64);
  EXPECT_EQ(k.lse_stride_token, 8);
  EXPECT_FALSE(k.causal);
  EXPECT_EQ(k.window_left, 9);
  EXPECT_FLOAT_EQ(k.softcap, 2.5f);
  EXPECT_EQ(k.sinks, sinks);
  EXPECT_EQ(k.alibi_slopes, slopes);
  p.variant.sinks = p.variant.alibi = false;  // arrays present but unused: the kernel ignores them
  k = make_kernel_params(p, t, plan, DevicePlan{}, ws);
  EXPECT_EQ(k.sinks, nullptr);
  EXPECT_EQ(k.alibi_slopes, nullptr);
}

// A mixed batch: the kernel gets the plan's device copy of query_start_loc (a problem with counts
// and a plan copy without them, or the reverse, is refused naming query_start_loc), and the batch
// strides, unused, are not held to the 16-byte rule.
TEST(KernelArguments, CarryQueryStartLoc) {
  DecodeProblem p = problem(8, 2, 64, DType::f16);
  p.q_len = 3;
  p.query_start_loc = {0, 3, 3, 4};
  const Plan plan = make_plan(p, {7}, {.order = LineOrder::head_major, .tile_tokens = 16});
  alignas(16) static std::byte ws[1 << 21];
  ASSERT_LE(device_workspace_layout(plan).bytes, static_cast<std::int64_t>(sizeof ws));
  DecodeTensors t = dense_tensors(p, ws, ws, ws, nullptr, ws, nullptr);
  const std::int32_t device_copy[4] = {0, 3, 3, 4};
  DevicePlan dp;
  dp.query_start_loc = device_copy;
  const KernelParams k = make_kernel_params(p, t, plan, dp, ws);
  EXPECT_EQ(k.query_start_loc, device_copy);
  EXPECT_EQ(k.q_len, 3);
  EXPECT_EQ(k.group_size, 12);  // the bound: a workspace slot's rows
  try {
    make_kernel_params(p, t, plan, DevicePlan{}, ws);
    ADD_FAILURE() << "a missing device copy was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "query_start_loc") << e.what();
  }
  t.q_stride_batch = t.out_stride_batch = 3;  // unused with query_start_loc
  EXPECT_NO_THROW(check_kernel_alignment(p, t));
  p.query_start_loc.clear();
  EXPECT_THROW(check_kernel_alignment(p, t), Error);
}

// An 8-bit cache reaches the kernel with its format and its scales, addressed with the scales'
// strides (per token-head: like the cache without head_dim; per KV head: head stride 1).
TEST(KernelArguments, CarryAnEightBitCachesFormatAndScales) {
  DecodeProblem p = problem(8, 2, 64, DType::bf16);
  p.kv_dtype = DType::fp8_e5m2;
  p.kv_scales = KvScales::per_kv_head;
  const Plan plan = make_plan(p, {7}, {.order = LineOrder::head_major, .tile_tokens = 16});
  alignas(16) static std::byte ws[1 << 21];
  float ks[2] = {}, vs[2] = {};
  DecodeTensors t = dense_tensors(p, ws, ws, ws, nullptr, ws, nullptr);
  t.k_scale = ks;
  t.v_scale = vs;
  KernelParams k = make_kernel_params(p, t, plan, DevicePlan{}, ws);
  EXPECT_EQ(k.kv_format, static_cast<std::int32_t>(Kv8Format::e5m2));
  EXPECT_EQ(k.k_scale, ks);
  EXPECT_EQ(k.v_scale, vs);
  EXPECT_EQ(k.k_scale_at.row(1, 5, 1), 1);  // scale of KV head 1
  EXPECT_EQ(k.v_scale_at.row(0, 9, 0), 0);
  p.kv_dtype = DType::int8;
  p.kv_scales = KvScales::per_token_head;
  t = dense_tensors(p, ws, ws, ws, nullptr, ws, nullptr);
  t.k_scale = ks;
  t.v_scale = vs;
  k = make_kernel_params(p, t, plan, DevicePlan{}, ws);
  EXPECT_EQ(k.kv_format, static_cast<std::int32_t>(Kv8Format::int8));
  EXPECT_EQ(k.k_scale_at.row(1, 5, 1), t.k_scale_strides.outer + 5 * 2 + 1);
}

// An 8-bit cache's rows are 16-byte aligned at strides of 16 elements (not 8).
TEST(KernelArguments, RejectEightBitRowsThatAreNot16ByteAligned) {
  DecodeProblem p = problem(8, 2, 64, DType::f16);
  p.kv_dtype = DType::int8;
  p.kv_scales = KvScales::per_token_head;
  alignas(16) static std::byte buf[4096];
  const DecodeTensors good = dense_tensors(p, buf, buf, buf, nullptr, buf, nullptr);
  EXPECT_NO_THROW(check_kernel_alignment(p, good));
  DecodeTensors t = good;
  t.k_strides.token = 136;  // 8-element aligned, not 16
  try {
    check_kernel_alignment(p, t);
    ADD_FAILURE() << "k_strides.token accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), "k_strides.token");
    EXPECT_NE(std::string(e.what()).find("multiple of 16 elements"), std::string::npos) << e.what();
  }
}

TEST(KernelArguments, RejectRowsThatAreNot16ByteAligned) {
  const DecodeProblem p = problem(8, 2, 64, DType::f16);
  alignas(16) static std::byte buf[4096];
  const DecodeTensors good = dense_tensors(p, buf, buf, buf, nullptr, buf, nullptr);
  EXPECT_NO_THROW(check_kernel_alignment(p, good));
  auto expect_error = [&](DecodeTensors t, const char* argument) {
    try {
      check_kernel_alignment(p, t);
      ADD_FAILURE() << argument << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.argument(), argument);
    }
  };
  DecodeTensors t = good;
  t.q = buf + 2;
  expect_error(t, "q");
  t = good;
  t.out_stride_head = 68;
  expect_error(t, "out_stride_head");
  t = good;
  t.q_stride_token = 516;
  expect_error(t, "q_stride_token");
  t = good;
  t.out_stride_token = 4;
  expect_error(t, "out_stride_token");
  t = good;
  t.k_cache = buf + 8;
  expect_error(t, "k_cache");
  t = good;
  t.v_strides.token = 132;
  expect_error(t, "v_strides.token");

  const Plan plan = make_plan(p, {7}, {.order = LineOrder::head_major, .tile_tokens = 16});
  ASSERT_GT(workspace_layout(plan).bytes, 0);
  EXPECT_THROW(check_workspace(plan, nullptr), Error);
  EXPECT_THROW(check_workspace(plan, buf + 4), Error);
  EXPECT_NO_THROW(check_workspace(plan, buf));
  const Plan direct = make_plan(p, {1}, {});
  EXPECT_NO_THROW(check_workspace(direct, nullptr));
}

// The lookup tests assume the whole configuration table (a build trimmed with
// LEANATTN_CUDA_HEAD_DIMS / LEANATTN_CUDA_DTYPES / LEANATTN_CUDA_KV_BITS skips them).
bool whole_table() {
  return compiled_kernels().size() == 28;
}

TEST(KernelLookup, PicksTheSmallestRowTileThatHoldsTheGroup) {
  if (!whole_table()) GTEST_SKIP() << "partial kernel table build";
  EXPECT_EQ(find_kernel(problem(8, 8, 128, DType::f16))->warps_m, 1);    // MHA
  EXPECT_EQ(find_kernel(problem(32, 8, 128, DType::bf16))->warps_m, 1);  // GQA 4
  EXPECT_EQ(find_kernel(problem(16, 1, 64, DType::bf16))->warps_m, 1);   // 16 rows
  EXPECT_EQ(find_kernel(problem(17, 1, 64, DType::bf16))->warps_m, 4);
  EXPECT_EQ(find_kernel(problem(64, 1, 256, DType::f16))->warps_m, 4);
  EXPECT_EQ(find_kernel(problem(128, 1, 128, DType::f16))->warps_m, 4);  // two passes
  EXPECT_EQ(find_kernel(problem(8, 2, 128, DType::bf16))->dtype, DType::bf16);
}

TEST(KernelLookup, ExplainsWhatIsUnsupported) {
  if (!whole_table()) GTEST_SKIP() << "partial kernel table build";
  EXPECT_EQ(find_kernel(problem(8, 2, 128, DType::f32)), nullptr);
  EXPECT_NE(why_unsupported(problem(8, 2, 128, DType::f32)).find("kv_dtype"), std::string::npos);
  DecodeProblem mixed = problem(8, 2, 128, DType::f16);
  mixed.kv_dtype = DType::bf16;
  EXPECT_NE(why_unsupported(mixed).find("q_dtype"), std::string::npos);
  const std::string why = why_unsupported(problem(8, 2, 96, DType::f16));
  EXPECT_EQ(why.rfind("head_dim", 0), 0u) << why;
  EXPECT_NE(why.find("64, 128, 256"), std::string::npos) << why;
  EXPECT_EQ(why_unsupported(problem(8, 2, 64, DType::f16)), "");
}

// An 8-bit cache (any format, any scale granularity) runs on the kv_bits 8 row of Q's type;
// f32 Q with it is refused naming q_dtype.
TEST(KernelLookup, PicksTheEightBitRowsForAnEightBitCache) {
  if (!whole_table()) GTEST_SKIP() << "partial kernel table build";
  for (DType kv : {DType::fp8_e4m3, DType::fp8_e5m2, DType::int8}) {
    for (DType q : {DType::f16, DType::bf16}) {
      DecodeProblem p = problem(32, 8, 128, q);
      p.kv_dtype = kv;
      p.kv_scales = default_kv_scales(kv);
      EXPECT_EQ(why_unsupported(p), "");
      const KernelHandle* k = find_kernel(p);
      ASSERT_NE(k, nullptr);
      EXPECT_EQ(k->kv_bits, 8);
      EXPECT_EQ(k->dtype, q);
      EXPECT_EQ(k->name, std::string(dtype_name(q)) + "_kv8_d128_wm1");
    }
    DecodeProblem f32 = problem(8, 2, 128, DType::f32);
    f32.kv_dtype = kv;
    f32.kv_scales = default_kv_scales(kv);
    EXPECT_EQ(find_kernel(f32), nullptr);
    EXPECT_EQ(why_unsupported(f32).rfind("q_dtype", 0), 0u) << why_unsupported(f32);
  }
  EXPECT_EQ(find_kernel(problem(32, 8, 128, DType::f16))->kv_bits, 16);
}

// The variants run in the kernel: nothing refused by name, and the configuration is chosen for a
// pair's rows, q_len x the GQA group (more rows than one tile: several passes).
TEST(KernelLookup, RunsTheVariantsAndPacksTheQueryTokensInTheRows) {
  if (!whole_table()) GTEST_SKIP() << "partial kernel table build";
  DecodeProblem p = problem(8, 2, 128, DType::f16);
  p.variant = {.causal = false, .window_left = 64, .softcap = 30.0f, .sinks = true, .alibi = true};
  EXPECT_EQ(why_unsupported(p), "");
  ASSERT_NE(find_kernel(p), nullptr);
  EXPECT_EQ(find_kernel(p)->warps_m, 1);  // 4 rows
  p.q_len = 4;                            // 16 rows: still one tile
  EXPECT_EQ(find_kernel(p)->warps_m, 1);
  p.q_len = 5;  // 20 rows: the 4-warp-row tile
  EXPECT_EQ(find_kernel(p)->warps_m, 4);
  p.q_len = 17;  // 68 rows: 4 warp rows, two passes
  EXPECT_EQ(find_kernel(p)->warps_m, 4);
  EXPECT_EQ(why_unsupported(p), "");
}

// can_run() and run() agree per device: both use the device's shared memory per CTA (opt-in).
TEST(KernelLookup, PicksAConfigurationThatFitsTheDevicesSharedMemory) {
  if (!whole_table()) GTEST_SKIP() << "partial kernel table build";
  constexpr std::int32_t kSm86 = 99 * 1024;   // sm_86, sm_89
  constexpr std::int32_t kSm80 = 163 * 1024;  // A100
  constexpr std::int32_t kSm90 = 227 * 1024;  // H100, H200
  for (std::int32_t d : {64, 128}) {
    for (std::int32_t q_heads : {8, 64}) {
      const DecodeProblem p = problem(q_heads, 2, d, DType::bf16);
      const KernelHandle* k = find_kernel(p, kSm86);
      ASSERT_NE(k, nullptr) << d;
      EXPECT_LE(k->smem_bytes + kStaticSmemBytes, kSm86) << k->name;
      EXPECT_EQ(k, find_kernel(p, kSm90)) << "the same configuration everywhere";
      EXPECT_EQ(why_unsupported(p, kSm86), "");
    }
  }
  const DecodeProblem d256 = problem(8, 2, 256, DType::f16);
  EXPECT_EQ(find_kernel(d256, kSm86), nullptr);
  const std::string why = why_unsupported(d256, kSm86);
  EXPECT_EQ(why.rfind("head_dim: 256 needs", 0), 0u) << why;
  EXPECT_EQ(find_kernel(d256, kSm90)->warps_m, 1);
  ASSERT_NE(find_kernel(d256, kSm80), nullptr);  // 4 warp rows (128 KiB) fit an A100
  EXPECT_EQ(find_kernel(d256, kSm80)->warps_m, 4);
  EXPECT_EQ(why_unsupported(d256, kSm80), "");
}

// A plan that does not fit the fixed buffers is refused by name: made for other workers or
// another batch, or a split plan with more segments than a lean one can have.
TEST(FixedPlan, RefusesPlansOutsideTheBounds) {
  DecodeProblem p = harness::test_problem({300, 40, 0, 700}, 8, 2, 64, DType::f16);
  const PlannerBounds bounds{4, 2, 5};
  std::vector<std::byte> region(planner_layout(bounds).plan_bytes);
  auto refusal = [&](const Plan& plan) {
    try {
      write_plan_region(plan, bounds, region);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  EXPECT_EQ(refusal(make_plan(p, Hardware{6}, {.strategy = Strategy::lean, .tile_tokens = 16}))
                .rfind("plan: was made for 6 workers, batch 4 and 2 KV heads; the fixed buffers "
                       "are for 5, 4 and 2",
                       0),
            0u);
  EXPECT_EQ(refusal(make_plan(p, Hardware{5},
                              {.strategy = Strategy::split, .tile_tokens = 16, .splits = 8}))
                .rfind("plan: has ", 0),
            0u);
  EXPECT_NO_THROW(write_plan_region(
      make_plan(p, Hardware{5}, {.strategy = Strategy::lean, .tile_tokens = 16}), bounds, region));
}

// plan_step(): the lengths given, the rest of the capacity at 0, planned as the device planner
// plans (lean, head-major, the step's workers and tile).
TEST(FixedPlan, PlansTheGivenLengthsPaddedToTheCapacity) {
  const DecodeProblem shape = harness::test_problem({500, 500, 500}, 4, 2, 64, DType::f16);
  const Plan plan = plan_step(shape, std::vector<std::int32_t>{300, 7}, 4, 16);
  EXPECT_EQ(plan.seq_lens, (std::vector<std::int32_t>{300, 7, 0}));
  EXPECT_EQ(plan.workers, 4);
  EXPECT_EQ(plan.tile_tokens, 16);
  DecodeProblem step = shape;
  step.seq_lens = {300, 7, 0};
  const Plan want =
      make_plan(step, Hardware{4},
                {.strategy = Strategy::lean, .order = LineOrder::head_major, .tile_tokens = 16});
  EXPECT_EQ(make_plan_image(plan).bytes, make_plan_image(want).bytes);
}

TEST(Device, AbsenceIsReportedCleanly) {
  bool available = true;
  EXPECT_NO_THROW(available = device_available());
  if (available) GTEST_SKIP() << "a CUDA device is present; the no-device path is not reachable";
  EXPECT_THROW(Engine{}, CudaError);
}

}  // namespace
}  // namespace leanattn::cuda
