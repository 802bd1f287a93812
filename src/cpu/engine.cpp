// cpu::Engine: validation, workspace, and the per-worker driver around the SIMD segment kernel:
// load the group's query rows, run the kernel over the segment's tokens, then write the output
// (direct) or the slot (split pair) and, for the last piece to arrive, merge the slots in order.
#include "leanattn/cpu_engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <thread>
#include <vector>

#include "cpu/prefetch_plan.hpp"
#include "cpu/segment_kernel.hpp"
#include "cpu/tensor_io.hpp"
#include "cpu/thread_pool.hpp"
#include "leanattn/core/softmax_state.hpp"
#include "leanattn/core/variant_rules.hpp"
#include "leanattn/error.hpp"
#include "problem/mutation.hpp"

namespace leanattn::cpu {

namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte[], AlignedFree>;

AlignedBuffer aligned_bytes(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 64) + 63) / 64 * 64;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (p == nullptr) throw std::bad_alloc();
  return AlignedBuffer(p);
}

// Per-thread scratch for a group of up to `n` segments: their query rows, and the state of the
// direct ones (split pieces keep their state in their workspace slot); the variants' per-row
// rules (one set per group: its segments share the request, so the rows' key ranges).
struct Scratch {
  std::vector<float> q, o, m, l;
  std::vector<std::uint16_t> q_bits;  // [n, rows, d]: Q's own bits for bf16 dot products
  std::vector<SegmentJob> jobs;
  std::vector<std::int64_t> key_begin, key_end, position;  // [rows]
  std::vector<float> slope;                                // [n, rows]
  std::vector<const void*> bias;                           // [n, rows]: each row's bias at key 0
  std::vector<ScoreRules> rules;                           // [n]
  std::vector<const char*> prefetch;  // [2, kKernelRowsPadded]: a call's K and V prefetch lines
  std::vector<float> gemm_tiles;      // the many-rows path's widened sweep of blocks
  // n jobs of `rows` query rows, q of d floats per row, o of dv.
  void reserve(std::size_t n, std::int32_t rows, std::int32_t d, std::int32_t dv) {
    const std::size_t qs = n * static_cast<std::size_t>(rows) * d;
    const std::size_t os = n * static_cast<std::size_t>(rows) * dv;
    const std::size_t ml = n * static_cast<std::size_t>(rows);
    if (q.size() < qs) q.resize(qs), q_bits.resize(qs);
    if (o.size() < os) o.resize(os);
    if (m.size() < ml) m.resize(ml), l.resize(ml);
    if (jobs.size() < n) jobs.resize(n), rules.resize(n);
    if (key_begin.size() < static_cast<std::size_t>(rows)) {
      key_begin.resize(static_cast<std::size_t>(rows));
      key_end.resize(static_cast<std::size_t>(rows));
      position.resize(static_cast<std::size_t>(rows));
    }
    if (slope.size() < ml) slope.resize(ml), bias.resize(ml);
    prefetch.resize(2 * kKernelRowsPadded);
    const auto tiles =
        static_cast<std::size_t>(gemm_sweep_blocks(d, dv) * gemm_scratch_floats(d, dv)) + 16;
    if (gemm_tiles.size() < tiles) gemm_tiles.resize(tiles);
  }
  // SegmentJob::gemm_scratch (reserved for heads of d and dv values): 64-byte aligned.
  float* gemm_scratch() {
    const auto at = reinterpret_cast<std::uintptr_t>(gemm_tiles.data());
    return gemm_tiles.data() + (64 - at % 64) % 64 / sizeof(float);
  }
};

// Everything one run needs, shared read-only by the threads (counters excepted).
struct RunContext {
  const DecodeProblem& problem;
  const Plan& plan;
  const DecodeTensors& tensors;
  SegmentKernelFn kernel;
  bool q_bits;  // the kernel takes Q's own bf16 bits (SimdKernel::bf16_dot, bf16 Q and K)
  std::int32_t gemm_rows;    // passes of at least this many rows take the many-rows path (0: none)
  std::int32_t gemm_blocks;  // kernel blocks per sweep of that path (gemm_sweep_blocks)
  KvAddressing k, v;
  KvAddressing k_scale, v_scale;  // a quantized cache's scales (unused otherwise)
  float* slot_o;
  float* slot_m;
  float* slot_l;
  std::uint32_t* counters;
};

void set_empty(float* o, float* m, float* l, std::int32_t rows, std::int32_t d) {
  std::fill(o, o + static_cast<std::ptrdiff_t>(rows) * d, 0.0f);
  std::fill(m, m + rows, -std::numeric_limits<float>::infinity());
  std::fill(l, l + rows, 0.0f);
}

// Mutation lse_off_by_one_tile: the pair's LSE rewritten as if one tile fewer had been summed
// (l scaled by (n - tile) / n), for requests of more than one tile.
void mutate_lse(const RunContext& cx, std::int32_t request, std::int32_t kv_head) {
  const std::int64_t n = cx.problem.seq_lens[static_cast<std::size_t>(request)];
  const std::int64_t tile = cx.plan.tile_tokens;
  if (cx.tensors.lse == nullptr || n <= tile) return;
  const std::int32_t g = cx.problem.group_size();
  for (std::int32_t r = 0; r < cx.problem.pair_rows(request); ++r) {
    const QueryIndex at = query_index(cx.problem, request, r / g);
    cx.tensors.lse[at.batch * cx.tensors.lse_stride_batch + at.token * cx.tensors.lse_stride_token +
                   kv_head * g + r % g] +=
        static_cast<float>(std::log(static_cast<double>(n - tile) / static_cast<double>(n)));
  }
}

// Merges the slots of reduction r in order and writes the output (scratch state 0 holds it).
// Slots are g = plan.group_size rows apart (the bound); the pair's own rows are merged.
void merge_reduction(const RunContext& cx, const Reduction& r, Scratch& sc) {
  const std::int32_t g = cx.plan.group_size, d = cx.plan.head_dim_v;
  const std::int32_t rows = cx.problem.pair_rows(r.request);
  const std::size_t stride = static_cast<std::size_t>(g) * d;
  float* o = sc.o.data();
  float* m = sc.m.data();
  float* l = sc.l.data();
  set_empty(o, m, l, rows, d);
  for (std::int32_t k = 0; k < r.num_slots; ++k) {
    const auto slot = static_cast<std::size_t>(r.slot_begin + k);
    for (std::int32_t row = 0; row < rows; ++row) {
      if (mutated(Mutation::merge_without_rescale)) {
        const float* ob = cx.slot_o + slot * stride + static_cast<std::size_t>(row) * d;
        for (std::int32_t i = 0; i < d; ++i) o[static_cast<std::size_t>(row) * d + i] += ob[i];
        m[row] = std::max(m[row], cx.slot_m[slot * g + row]);
        l[row] += cx.slot_l[slot * g + row];
        continue;
      }
      SoftmaxStats<float> acc{m[row], l[row]};
      merge_into(acc, o + static_cast<std::size_t>(row) * d,
                 SoftmaxStats<float>{cx.slot_m[slot * g + row], cx.slot_l[slot * g + row]},
                 cx.slot_o + slot * stride + static_cast<std::size_t>(row) * d, d);
      m[row] = acc.m;
      l[row] = acc.l;
    }
  }
  write_output(cx.problem, cx.tensors, r.request, r.kv_head, o, m, l);
  if (mutated(Mutation::lse_off_by_one_tile)) mutate_lse(cx, r.request, r.kv_head);
}

// The variant rules of the rows of `group`'s segments into sc.rules (null when plain, or when
// no row of the group can miss a key and nothing else changes the scores).
void prepare_rules(const RunContext& cx, std::span<const Segment> group, Scratch& sc) {
  const DecodeProblem& p = cx.problem;
  const AttentionVariant& var = p.variant;
  const std::int32_t request = group.front().request, q_count = p.query_len(request);
  const bool masks = (var.causal && q_count > 1) || var.has_window();
  for (std::size_t i = 0; i < group.size(); ++i) sc.jobs[i].rules = nullptr;
  if (!masks && var.softcap == 0.0f && !var.alibi && !var.bias) return;
  const std::int32_t g = p.group_size(), rows = p.pair_rows(request);
  const std::int64_t len = p.seq_lens[static_cast<std::size_t>(request)];
  for (std::int32_t r = 0; r < rows; ++r) {
    const std::int32_t query = r / g;
    const KeyRange seen = visible_keys(len, q_count, query, var.causal, var.window_left);
    sc.key_begin[static_cast<std::size_t>(r)] = seen.begin;
    sc.key_end[static_cast<std::size_t>(r)] = seen.end;
    sc.position[static_cast<std::size_t>(r)] = query_position(len, q_count, query);
  }
  for (std::size_t i = 0; i < group.size(); ++i) {
    float* slope = sc.slope.data() + i * static_cast<std::size_t>(rows);
    if (var.alibi) {
      for (std::int32_t r = 0; r < rows; ++r) {
        slope[r] = cx.tensors.alibi_slopes[group[i].kv_head * g + r % g];
      }
    }
    const void** bias = sc.bias.data() + i * static_cast<std::size_t>(rows);
    if (var.bias) {
      const DecodeTensors& t = cx.tensors;
      const std::size_t size = dtype_size(p.bias_dtype);
      for (std::int32_t r = 0; r < rows; ++r) {
        const QueryIndex row = query_index(p, request, r / g);
        const std::int64_t at = row.batch * t.bias_stride_batch + row.token * t.bias_stride_token +
                                (group[i].kv_head * g + r % g) * t.bias_stride_head;
        bias[r] = static_cast<const std::byte*>(t.bias) + at * static_cast<std::int64_t>(size);
      }
    }
    sc.rules[i] = ScoreRules{sc.key_begin.data(), sc.key_end.data(),
                             sc.position.data(),  var.alibi ? slope : nullptr,
                             var.softcap,         var.bias ? bias : nullptr,
                             p.bias_dtype};
    sc.jobs[i].rules = &sc.rules[i];
  }
}

// A group: consecutive segments of one worker with the same request and tile range (with a
// token-major plan, every KV head of the request). They run block by block in lockstep, so the
// worker reads whole token rows while each segment keeps its own softmax state.
void run_group(const RunContext& cx, std::span<const Segment> group, Scratch& sc) {
  const std::int32_t g = cx.plan.group_size, d = cx.plan.head_dim, dv = cx.plan.head_dim_v;
  const std::size_t q_stride = static_cast<std::size_t>(g) * d;
  const std::size_t stride = static_cast<std::size_t>(g) * dv;  // o's
  const Segment& first = group.front();
  const std::int32_t rows = cx.problem.pair_rows(first.request);  // <= g, the slots' stride
  const bool gemm = cx.gemm_rows > 0 && rows >= cx.gemm_rows;     // reads q, not q_bits
  const bool q_bits = cx.q_bits && !gemm;
  const KeyRange keys = cx.plan.tile_keys(first.request, first.tile_begin, first.tile_end);
  std::int64_t tb = keys.begin;
  const std::int64_t te = keys.end;
  if (mutated(Mutation::continuation_skips_tile) && first.kind == SegmentKind::partial) {
    tb = std::min(tb + cx.plan.tile_tokens, te);
  }
  for (std::size_t i = 0; i < group.size(); ++i) {
    const Segment& s = group[i];
    SegmentJob& job = sc.jobs[i];
    if (s.kind == SegmentKind::direct) {
      job.o = sc.o.data() + i * stride;
      job.m = sc.m.data() + i * static_cast<std::size_t>(g);
      job.l = sc.l.data() + i * static_cast<std::size_t>(g);
    } else {
      job.o = cx.slot_o + static_cast<std::size_t>(s.slot) * stride;
      job.m = cx.slot_m + static_cast<std::size_t>(s.slot) * g;
      job.l = cx.slot_l + static_cast<std::size_t>(s.slot) * g;
    }
    set_empty(job.o, job.m, job.l, rows, dv);
    job.q = sc.q.data() + i * q_stride;
    job.q_bits = q_bits ? sc.q_bits.data() + i * q_stride : nullptr;
    job.q_scale = cx.problem.softmax_scale();
    job.gemm_scratch = gemm ? sc.gemm_scratch() : nullptr;
    job.gemm_blocks = gemm ? cx.gemm_blocks : 1;
    if (te > tb && q_bits) {
      load_q_bits(cx.problem, cx.tensors, s.request, s.kv_head, sc.q_bits.data() + i * q_stride);
    } else if (te > tb) {
      load_scaled_q(cx.problem, cx.tensors, s.request, s.kv_head, sc.q.data() + i * q_stride);
    }
    job.rows = rows;
    job.head_dim = d;
    job.head_dim_v = dv;
    job.k_cache = cx.tensors.k_cache;
    job.v_cache = cx.tensors.v_cache;
    job.kv_dtype = cx.problem.kv_dtype;
    job.v_dtype = cx.problem.value_dtype();
    job.k = cx.k;
    job.v = cx.v;
    job.k_scale = cx.tensors.k_scale;
    job.v_scale = cx.tensors.v_scale;
    job.k_scale_at = cx.k_scale;
    job.v_scale_at = cx.v_scale;
    job.request = s.request;
    job.kv_head = s.kv_head;
  }
  prepare_rules(cx, group, sc);
  // The calls run block by block, head by head within a block. Each call prefetches part of what
  // comes next (plan_prefetch, docs/cpu-engine.md, "Prefetch").
  const auto n = static_cast<std::int64_t>(group.size());
  // A head's row of K and of V: its stride unit (dtype_size) and its length in those units.
  const DType kt = cx.problem.kv_dtype, vt = cx.problem.value_dtype();
  const std::int64_t k_elt = dtype_size(kt), v_elt = dtype_size(vt);
  const std::int64_t k_row = row_units(kt, d), v_row = row_units(vt, dv);
  const PrefetchGroup pg{static_cast<const char*>(cx.tensors.k_cache),
                         static_cast<const char*>(cx.tensors.v_cache),
                         cx.k,
                         cx.v,
                         k_elt,
                         first.request,
                         first.kv_head,
                         n,
                         std::max(k_row * k_elt, v_row * v_elt),
                         group.back().kv_head - first.kv_head + 1 == n &&
                             cx.k.head_stride == k_row && cx.v.head_stride == v_row &&
                             k_row * k_elt == v_row * v_elt,
                         v_elt};
  const char** pk = sc.prefetch.data();
  const char** pv = pk + kKernelRowsPadded;
  // A many-rows pass takes a sweep of blocks per call and prefetches nothing (it is bound by its
  // FMAs, and the hardware prefetcher follows the rows it widens).
  const std::int64_t step =
      gemm ? std::int64_t{kKernelBlockTokens} * cx.gemm_blocks : std::int64_t{kKernelBlockTokens};
  for (std::int64_t t = tb; t < te; t += step) {
    const std::int64_t next = std::min<std::int64_t>(t + step, te);
    const PrefetchBlock block =
        gemm ? PrefetchBlock{} : prefetch_block(pg, next, te, kKernelBlockTokens);
    for (std::int64_t i = 0; i < n; ++i) {
      SegmentJob& job = sc.jobs[static_cast<std::size_t>(i)];
      job.token_begin = t;
      job.token_end = next;
      job.prefetch_k = pk;
      job.prefetch_v = pv;
      const std::int32_t next_head =
          sc.jobs[static_cast<std::size_t>(i + 1 == n ? 0 : i + 1)].kv_head;
      job.prefetch_lines = gemm ? 0
                                : plan_prefetch(pg, block, i, t, next_head, kKernelBlockTokens,
                                                kKernelRowsPadded, pk, pv);
      cx.kernel(job);
    }
  }
  for (std::size_t i = 0; i < group.size(); ++i) {
    const Segment& s = group[i];
    const SegmentJob& job = sc.jobs[i];
    if (s.kind == SegmentKind::direct) {
      write_output(cx.problem, cx.tensors, s.request, s.kv_head, job.o, job.m, job.l);
      if (mutated(Mutation::lse_off_by_one_tile)) mutate_lse(cx, s.request, s.kv_head);
      continue;
    }
    // The last piece to arrive merges: release our slot, acquire everyone else's.
    const Reduction& r = cx.plan.reductions[static_cast<std::size_t>(s.reduction)];
    std::atomic_ref<std::uint32_t> arrived(cx.counters[s.reduction]);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<std::uint32_t>(r.num_slots)) {
      merge_reduction(cx, r, sc);  // scratch state 0 is free again: its output is written
    }
  }
}

// Passes of at least this many query rows (query tokens x the GQA group of one KV head) run the
// many-rows path (gemm_rows-inl.hpp); fewer, the tiled kernel. kGemmRowsDefault from measurement
// (docs/cpu-engine.md, "Passes of many rows"). LEANATTN_CPU_GEMM_ROWS, read when an engine is
// made, overrides it for tests and A/B benchmarks: N >= 1 (1: every pass), 0 = never.
constexpr std::int32_t kGemmRowsDefault = 16;
std::int32_t many_rows_threshold() {
  const char* env = std::getenv("LEANATTN_CPU_GEMM_ROWS");
  if (env == nullptr || *env == '\0') return kGemmRowsDefault;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  require(*end == '\0' && n >= 0 && n <= (1 << 30), "LEANATTN_CPU_GEMM_ROWS",
          [&] { return "must be a row count >= 0 (got '" + std::string(env) + "')"; });
  return static_cast<std::int32_t>(n);
}

// Splits a worker's segments into groups (see run_group) and runs them.
void run_worker(const RunContext& cx, std::span<const Segment> segs, Scratch& sc) {
  std::size_t i = 0;
  while (i < segs.size()) {
    std::size_t j = i + 1;
    while (j < segs.size() && segs[j].request == segs[i].request &&
           segs[j].tile_begin == segs[i].tile_begin && segs[j].tile_end == segs[i].tile_end &&
           segs[j].kv_head > segs[j - 1].kv_head) {
      ++j;
    }
    run_group(cx, segs.subspan(i, j - i), sc);
    i = j;
  }
}

}  // namespace

struct Engine::Impl {
  SimdKernel kernel;
  ThreadPool pool;
  AlignedBuffer workspace;
  std::size_t workspace_bytes = 0;
  std::vector<Scratch> scratch;
  PlanCheckBuffers plan_check;  // check_plan's memory, kept
  // Plans this engine made or checked, newest last: a run of one of them skips check_plan (it
  // sorts the segments), so a plan reused from call to call is checked once.
  std::vector<Plan> known_plans;
  static constexpr std::size_t kKnownPlans = 4;

  bool known(const Plan& plan) const {
    return std::find(known_plans.begin(), known_plans.end(), plan) != known_plans.end();
  }
  void remember(const Plan& plan) {
    if (known_plans.size() == kKnownPlans) known_plans.erase(known_plans.begin());
    known_plans.push_back(plan);
  }
  std::int64_t inline_kv_bytes = 0;
  std::int32_t threads = 1;
  std::int32_t gemm_rows = many_rows_threshold();
  ParallelFor parallel;                // the caller's threads; else the pool's
  std::vector<double> worker_seconds;  // of the last run, [plan.workers]

  // A caller's ParallelFor leaves the pool with the calling thread alone.
  Impl(const SimdKernel& k, std::int32_t n, bool spin, bool pin, const ParallelFor& lent)
      : kernel(k),
        pool(lent.run != nullptr ? 1 : n, spin, pin),
        scratch(static_cast<std::size_t>(n)),
        threads(n),
        parallel(lent) {}
};

Engine::Engine(const EngineOptions& options) {
  const std::int32_t threads = resolve_workers(options.workers);
  const std::int32_t cores = default_workers();
  require(options.inline_kv_bytes >= 0, "inline_kv_bytes",
          [&] { return "must be >= 0 (got " + std::to_string(options.inline_kv_bytes) + ")"; });
  impl_ = std::make_unique<Impl>(find_simd_kernel(options.simd), threads, threads <= cores,
                                 options.pin_threads, options.parallel);
  impl_->inline_kv_bytes = options.inline_kv_bytes;
}

Engine::~Engine() = default;

std::int32_t Engine::workers() const {
  return impl_->threads;
}

const std::string& Engine::simd_target() const {
  return impl_->kernel.name;
}

PlanOptions cpu_plan_options(const PlanOptions& options) {
  return resolve_plan_options(options, PlanTarget::cpu);
}

Plan Engine::plan(const DecodeProblem& problem, const PlanOptions& options) const {
  Plan plan = make_plan(problem, hardware(), cpu_plan_options(options));
  if (!impl_->known(plan)) impl_->remember(plan);  // made by the planner: valid
  return plan;
}

void Engine::decode(const DecodeProblem& problem, const DecodeTensors& tensors,
                    const PlanOptions& options) {
  run(problem, plan(problem, options), tensors);
}

void Engine::run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors) {
  const auto need =
      std::max<std::size_t>(64, static_cast<std::size_t>(workspace_layout(plan).bytes));
  if (impl_->workspace_bytes < need) {
    impl_->workspace = aligned_bytes(need);
    impl_->workspace_bytes = need;
  }
  run(problem, plan, tensors, std::span<std::byte>(impl_->workspace.get(), impl_->workspace_bytes));
}

void Engine::run(const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors,
                 std::span<std::byte> workspace) {
  validate(problem);
  validate(problem, tensors);
  check_plan_matches(plan, problem);
  if (!impl_->known(plan)) {
    check_plan(plan, impl_->plan_check);
    impl_->remember(plan);
  }
  const WorkspaceLayout layout = workspace_layout(plan);
  require(static_cast<std::int64_t>(workspace.size()) >= layout.bytes, "workspace", [&] {
    return "must hold at least " + std::to_string(layout.bytes) + " bytes for this plan (got " +
           std::to_string(workspace.size()) + ")";
  });
  require(reinterpret_cast<std::uintptr_t>(workspace.data()) % 64 == 0, "workspace",
          [] { return "must be 64-byte aligned"; });

  std::byte* ws = workspace.data();
  std::vector<std::int32_t> shifted;  // mutation block_table_off_by_one: every page one further
  if (mutated(Mutation::block_table_off_by_one) && problem.layout == KvLayout::paged) {
    shifted.assign(tensors.block_table, tensors.block_table +
                                            (problem.batch() - 1) * tensors.block_table_stride +
                                            problem.max_pages);
    for (std::int32_t& e : shifted) e = static_cast<std::int32_t>((e + 1) % problem.num_pages);
  }
  auto kv = [&](const KvStrides& st) {
    KvAddressing a = kv_addressing(problem, tensors, st);
    if (!shifted.empty()) a.block_table = shifted.data();
    return a;
  };
  // The row kernel's targets (SCALAR, SVE) have no many-rows path: their passes keep the
  // one-block calls and the prefetch.
  const std::int32_t many_rows = impl_->kernel.row_kernel ? 0 : impl_->gemm_rows;
  const RunContext cx{problem,
                      plan,
                      tensors,
                      impl_->kernel.compute,
                      impl_->kernel.bf16_dot && problem.q_dtype == DType::bf16 &&
                          problem.kv_dtype == DType::bf16 && problem.head_dim % 32 == 0,
                      many_rows,
                      gemm_sweep_blocks(plan.head_dim, plan.head_dim_v),
                      kv(tensors.k_strides),
                      kv(tensors.v_strides),
                      kv(tensors.k_scale_strides),
                      kv(tensors.v_scale_strides),
                      reinterpret_cast<float*>(ws + layout.o_offset),
                      reinterpret_cast<float*>(ws + layout.m_offset),
                      reinterpret_cast<float*>(ws + layout.l_offset),
                      reinterpret_cast<std::uint32_t*>(ws + layout.counters_offset)};
  if (!plan.reductions.empty()) {
    std::memset(cx.counters, 0, plan.reductions.size() * sizeof(std::uint32_t));
  }
  for (Scratch& sc : impl_->scratch) {
    sc.reserve(static_cast<std::size_t>(plan.kv_heads), plan.group_size, plan.head_dim,
               plan.head_dim_v);
  }

  // Each plan worker's segments, timed (Engine::worker_seconds; each thread writes its own).
  impl_->worker_seconds.assign(static_cast<std::size_t>(plan.workers), 0.0);
  auto timed_worker = [&](std::int32_t w, Scratch& sc) {
    const auto start = std::chrono::steady_clock::now();
    run_worker(cx, plan.worker_segments(w), sc);
    impl_->worker_seconds[static_cast<std::size_t>(w)] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (problem.kv_bytes(shares_kv(tensors)) * problem.q_len <= impl_->inline_kv_bytes) {
    // A small problem: every worker's segments in turn on this thread (EngineOptions).
    for (std::int32_t w = 0; w < plan.workers; ++w) timed_worker(w, impl_->scratch[0]);
    return;
  }
  const std::int32_t threads = impl_->threads;
  auto job = [&](std::int32_t thread) {
    Scratch& sc = impl_->scratch[static_cast<std::size_t>(thread)];
    for (std::int32_t w = thread; w < plan.workers; w += threads) timed_worker(w, sc);
  };
  if (impl_->parallel.run != nullptr) {
    impl_->parallel.run(
        impl_->parallel.context, threads,
        [](void* j, std::int32_t thread) { (*static_cast<decltype(job)*>(j))(thread); }, &job);
    return;
  }
  impl_->pool.run(job);
}

std::span<const double> Engine::worker_seconds() const {
  return impl_->worker_seconds;
}

std::vector<std::string> simd_targets() {
  std::vector<std::string> names;
  for (const SimdKernel& k : supported_simd_kernels()) names.push_back(k.name);
  return names;
}

}  // namespace leanattn::cpu
