// Randomised strategy, determinism and batch-invariance checks (see random_checks.hpp).
#include "checks/random_checks.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>

#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "leanattn/cpu_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::checks {

ExecutorOptions cpu_options_for_case(const std::string& simd, std::int64_t index) {
  if (simd != "all") return {.simd = simd};
  const std::vector<std::string> targets = cpu::simd_targets();
  return {.simd = targets[static_cast<std::size_t>(index / 10) % targets.size()]};
}

namespace {

// The "cpu" executor of `executors` with `cpu`'s options and `workers` threads.
std::shared_ptr<ExecutorCache::Entry> cpu_executor(ExecutorCache& executors, ExecutorOptions cpu,
                                                   std::int32_t workers) {
  cpu.workers = workers;
  return executors.get("cpu", cpu);
}

// Runs `plan` on that executor, holding it busy.
void run_on_cpu(ExecutorCache& executors, const ExecutorOptions& cpu, std::int32_t workers,
                const DecodeProblem& problem, const Plan& plan, const DecodeTensors& tensors) {
  const std::shared_ptr<ExecutorCache::Entry> kept = cpu_executor(executors, cpu, workers);
  const std::lock_guard<std::mutex> busy(kept->busy());
  kept->executor().run(problem, plan, tensors);
}

std::mt19937_64 case_rng(std::uint64_t seed, std::int64_t index) {
  const auto i = static_cast<std::uint64_t>(index);
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), 0x1ea9a77u};
  return std::mt19937_64(seq);
}

}  // namespace

std::string describe(const DecodeProblem& p, std::int32_t workers, std::int32_t tile) {
  std::ostringstream os;
  os << "heads " << p.q_heads << "/" << p.kv_heads << " d " << p.head_dim;
  if (p.value_dim() != p.head_dim) os << "/" << p.value_dim();
  os << " " << kv_dtypes_name(p);
  if (is_quantized(p.kv_dtype)) {  // an 8-bit cache: its scales and the query's type
    os << " " << kv_scales_name(p.kv_scales) << " q " << dtype_name(p.q_dtype);
  }
  os << " seq_lens";
  for (std::size_t i = 0; i < p.seq_lens.size(); ++i) os << (i ? "," : " ") << p.seq_lens[i];
  if (p.layout == KvLayout::paged) os << " paged " << p.page_size;
  if (p.has_query_start_loc()) {
    os << " query_start_loc";
    for (std::size_t i = 0; i < p.query_start_loc.size(); ++i)
      os << (i ? "," : " ") << p.query_start_loc[i];
  } else if (p.q_len != 1) {
    os << " q_len " << p.q_len;
  }
  const AttentionVariant& v = p.variant;
  if (!v.causal) os << " non-causal";
  if (v.has_window()) os << " window " << v.window_left;
  if (v.softcap != 0.0f) os << " softcap " << v.softcap;
  if (v.sinks) os << " sinks";
  if (v.alibi) os << " alibi";
  if (v.bias) os << " bias " << dtype_name(p.bias_dtype);
  os << " workers " << workers << " tile " << tile;
  return os.str();
}

std::string accuracy_text(const harness::Accuracy& a) {
  std::ostringstream os;
  os.precision(3);
  os << "err " << a.max_abs_err << " (tol " << a.tolerance << "), lse err " << a.max_lse_err
     << ", mismatches " << a.mismatches;
  if (!a.ok()) os << ": " << a.first_problem;
  return os.str();
}

namespace {

// Output rows of request b: bytes of out and lse.
std::pair<std::vector<std::byte>, std::vector<float>> request_rows(const harness::HostCase& c,
                                                                   std::int32_t b) {
  const std::size_t heads = static_cast<std::size_t>(c.problem.q_heads) * c.problem.q_len;
  const std::size_t row = heads * c.problem.value_dim() * dtype_size(c.problem.q_dtype);
  std::vector<std::byte> out(c.out.begin() + static_cast<std::ptrdiff_t>(row * b),
                             c.out.begin() + static_cast<std::ptrdiff_t>(row * (b + 1)));
  std::vector<float> lse(c.lse.begin() + static_cast<std::ptrdiff_t>(heads * b),
                         c.lse.begin() + static_cast<std::ptrdiff_t>(heads * (b + 1)));
  return {out, lse};
}

// Request 0's bias rows of `a` into request `at` of `b` (variant.bias). make_case shares one row
// among the heads for odd seeds, and the two cases' seeds have the same parity.
void copy_request_bias(const harness::HostCase& a, harness::HostCase& b, std::int32_t at) {
  const DecodeProblem& p = a.problem;
  if (!p.variant.bias) return;
  const std::size_t size = dtype_size(p.bias_dtype);
  const auto keys = static_cast<std::size_t>(p.seq_lens[0]);
  for (std::int32_t i = 0; i < p.q_len; ++i) {
    for (std::int32_t h = 0; h < p.q_heads; ++h) {
      const std::int64_t from = i * a.bias_stride_token + h * a.bias_stride_head;
      const std::int64_t to =
          at * b.bias_stride_batch + i * b.bias_stride_token + h * b.bias_stride_head;
      std::memcpy(b.bias.data() + static_cast<std::size_t>(to) * size,
                  a.bias.data() + static_cast<std::size_t>(from) * size, keys * size);
    }
  }
}

}  // namespace

harness::RandomCase draw_case(std::uint64_t seed, std::int64_t index,
                              const harness::RandomLimits& limits) {
  std::mt19937_64 rng = case_rng(seed, index);
  return harness::random_case(rng, limits);
}

CaseReport random_strategies_case(std::uint64_t seed, std::int64_t index,
                                  const harness::RandomLimits& limits, ExecutorCache& executors,
                                  const ExecutorOptions& cpu) {
  harness::RandomCase rc = draw_case(seed, index, limits);
  harness::HostCase c =
      harness::make_case(rc.problem, seed ^ static_cast<std::uint64_t>(index), rc.shared_kv);
  CaseReport report;
  report.problem = describe(c.problem, rc.hardware.workers, rc.options.tile_tokens);
  if (rc.shared_kv) report.problem += " shared_kv";
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  const auto naive = harness::naive_same_precision(c.problem, c.tensors());
  struct Variant {
    std::string name;
    PlanOptions options;
  };
  const std::int32_t tile = rc.options.tile_tokens;
  // A split count and a batch-invariant chunk size for this case, from their own stream.
  std::mt19937_64 vr = case_rng(seed, index + (2ll << 40));
  const auto splits = std::uniform_int_distribution<std::int32_t>(2, 8)(vr);
  const std::int32_t chunks[] = {1, 2, 3, 5, 16};
  const std::int32_t chunk = chunks[std::uniform_int_distribution<int>(0, 4)(vr)];
  const Variant variants[] = {
      {"lean/head_major",
       {.strategy = Strategy::lean, .order = LineOrder::head_major, .tile_tokens = tile}},
      {"lean/token_major",
       {.strategy = Strategy::lean, .order = LineOrder::token_major, .tile_tokens = tile}},
      {"lean/batch_invariant/chunk " + std::to_string(chunk),
       {.strategy = Strategy::lean,
        .tile_tokens = tile,
        .batch_invariant = true,
        .chunk_tiles = chunk}},
      {"split", {.strategy = Strategy::split, .tile_tokens = tile}},
      {"split/" + std::to_string(splits),
       {.strategy = Strategy::split, .tile_tokens = tile, .splits = splits}},
      {"head", {.strategy = Strategy::head, .tile_tokens = tile}},
      // The CPU engine's plans for the baselines: contiguous pairs in whole token rows.
      {"split/token_major",
       {.strategy = Strategy::split,
        .order = LineOrder::token_major,
        .tile_tokens = tile,
        .split_rule = SplitRule::even_workers}},
      {"split/" + std::to_string(splits) + "/token_major",
       {.strategy = Strategy::split,
        .order = LineOrder::token_major,
        .tile_tokens = tile,
        .splits = splits}},
      {"head/token_major",
       {.strategy = Strategy::head, .order = LineOrder::token_major, .tile_tokens = tile}},
  };
  // Outside the loop's try: a bad --simd is one error, not a failure per strategy.
  const std::shared_ptr<ExecutorCache::Entry> kept =
      cpu_executor(executors, cpu, rc.hardware.workers);
  const std::lock_guard<std::mutex> busy(kept->busy());
  for (const Variant& v : variants) {
    Outcome o{v.name, false, ""};
    try {
      harness::poison_outputs(c);
      kept->executor().run(c.problem, make_plan(c.problem, rc.hardware, v.options), c.tensors());
      const harness::Accuracy a = harness::check_accuracy(c, ref, true, &naive);
      o.ok = a.ok();
      o.detail = accuracy_text(a);
    } catch (const std::exception& e) {
      o.detail = std::string("threw: ") + e.what();
    }
    report.outcomes.push_back(o);
  }
  return report;
}

CaseReport reproducibility_case(std::uint64_t seed, std::int64_t index, ExecutorCache& executors,
                                const ExecutorOptions& cpu) {
  std::mt19937_64 rng = case_rng(seed, index + (1ll << 40));
  harness::RandomLimits lim;
  lim.max_len = 3000;
  lim.max_batch = 6;
  lim.mixed_queries = false;  // companions below repeat request 0's q_len rows
  harness::RandomCase rc = harness::random_case(rng, lim);
  DecodeProblem p = rc.problem;
  p.layout = KvLayout::contiguous;  // companions below reuse the same cache rows
  p.capacity = 3000;
  std::uniform_int_distribution<std::int32_t> len(0, 3000), workers(1, 24);
  CaseReport report;
  report.problem = describe(p, rc.hardware.workers, rc.options.tile_tokens);
  const PlanOptions tile_only{.tile_tokens =
                                  rc.options.tile_tokens == 0 ? 16 : rc.options.tile_tokens};
  const std::int32_t chunk_sizes[] = {0, 1, 2, 3, 5, 16};  // 0: the default
  const std::int32_t chunk = chunk_sizes[rng() % 6];

  // Determinism: one plan, two runs.
  {
    harness::HostCase c = harness::make_case(p, seed + static_cast<std::uint64_t>(index));
    const std::shared_ptr<ExecutorCache::Entry> kept =
        cpu_executor(executors, cpu, rc.hardware.workers);
    const std::lock_guard<std::mutex> busy(kept->busy());
    Executor& e = kept->executor();
    const Plan plan = e.plan(c.problem, tile_only);
    Outcome o{"determinism", true, ""};
    e.run(c.problem, plan, c.tensors());
    const auto first_out = c.out;
    const auto first_lse = c.lse;
    harness::poison_outputs(c);
    e.run(c.problem, plan, c.tensors());
    if (first_out != c.out ||
        std::memcmp(first_lse.data(), c.lse.data(), first_lse.size() * 4) != 0) {
      o.ok = false;
      o.detail = "two runs of one plan differ";
    }
    report.outcomes.push_back(o);
  }

  // Batch invariance: request 0 of batch A (its own companions, worker count) versus the same
  // request at another position of batch B (other companions, other worker count).
  {
    harness::HostCase a = harness::make_case(p, seed + 7 * static_cast<std::uint64_t>(index));
    DecodeProblem pb = p;
    pb.seq_lens.clear();
    const auto extra = static_cast<std::int32_t>(rng() % 5);
    auto companion = [&] {  // a length, at least q_len unless empty
      const std::int32_t n = len(rng);
      return n == 0 ? 0 : std::max(n, p.q_len);
    };
    for (std::int32_t i = 0; i < extra; ++i) pb.seq_lens.push_back(companion());
    const std::int32_t at = static_cast<std::int32_t>(pb.seq_lens.size());
    pb.seq_lens.push_back(p.seq_lens[0]);
    pb.seq_lens.push_back(companion());
    harness::HostCase b = harness::make_case(pb, seed + 13 * static_cast<std::uint64_t>(index));
    // Copy request 0's query and cache rows of A into request `at` of B.
    const std::size_t qrow =
        static_cast<std::size_t>(p.q_len) * p.q_heads * p.head_dim * dtype_size(p.q_dtype);
    std::memcpy(b.q.data() + qrow * at, a.q.data(), qrow);
    b.sinks = a.sinks;  // per query head: the same for both batches
    copy_request_bias(a, b, at);
    auto request_bytes = [&](DType type, std::int32_t width) {
      return static_cast<std::size_t>(p.capacity) * p.kv_heads * row_units(type, width) *
             dtype_size(type);
    };
    const std::size_t krow = request_bytes(p.kv_dtype, p.head_dim);
    const std::size_t vrow = request_bytes(p.value_dtype(), p.value_dim());
    std::memcpy(b.k.data() + krow * at, a.k.data(), krow);
    std::memcpy(b.v.data() + vrow * at, a.v.data(), vrow);
    if (p.kv_scales == KvScales::per_token_head) {  // the request's scale rows too
      const std::size_t srow = static_cast<std::size_t>(p.capacity) * p.kv_heads;
      std::copy_n(a.k_scale.begin(), srow,
                  b.k_scale.begin() + static_cast<std::ptrdiff_t>(srow * at));
      std::copy_n(a.v_scale.begin(), srow,
                  b.v_scale.begin() + static_cast<std::ptrdiff_t>(srow * at));
    } else {  // per tensor or per KV head: the same scales for both batches
      b.k_scale = a.k_scale;
      b.v_scale = a.v_scale;
    }
    PlanOptions inv = tile_only;
    inv.batch_invariant = true;
    inv.chunk_tiles = chunk;
    const std::int32_t wa = rc.hardware.workers, wb = workers(rng);
    run_on_cpu(executors, cpu, wa, a.problem, make_plan(a.problem, {wa}, inv), a.tensors());
    run_on_cpu(executors, cpu, wb, b.problem, make_plan(b.problem, {wb}, inv), b.tensors());
    const auto ra = request_rows(a, 0), rb = request_rows(b, at);
    Outcome o{"batch invariance", true, ""};
    if (ra.first != rb.first ||
        std::memcmp(ra.second.data(), rb.second.data(), ra.second.size() * 4) != 0) {
      o.ok = false;
      o.detail = "request of length " + std::to_string(p.seq_lens[0]) + " (chunks of " +
                 std::to_string(chunk) + " tiles) differs between " + std::to_string(wa) + " and " +
                 std::to_string(wb) + " workers";
    }
    report.outcomes.push_back(o);
  }
  return report;
}

}  // namespace leanattn::checks
