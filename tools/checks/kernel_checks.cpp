// kernel_case() and the registry of kernel backends (see kernel_checks.hpp). The CUDA engine's
// backend is registered when it is built (LEANATTN_WITH_CUDA).
#include "checks/kernel_checks.hpp"

#include <exception>
#include <utility>

#include "harness/accuracy.hpp"
#include "harness/naive_baseline.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::checks {

namespace {

using Factory = std::unique_ptr<KernelBackend> (*)(const KernelBackendOptions&);

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> entries = {
    {"cuda-emulated", make_emulated_kernel_backend},
#if LEANATTN_WITH_CUDA
    {"cuda", make_cuda_kernel_backend},
#endif
  };
  return entries;
}

}  // namespace

std::vector<std::string> kernel_backend_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<KernelBackend> make_kernel_backend(std::string_view name,
                                                   const KernelBackendOptions& options) {
  std::string built;
  for (const auto& [entry, factory] : registry()) {
    if (entry == name) return factory(options);
    built += ", " + entry;
  }
  throw Error("backend",
              "must be cpu" + built + " in this build (got '" + std::string(name) + "')");
}

CaseReport kernel_case(std::uint64_t seed, std::int64_t index, const harness::RandomLimits& limits,
                       KernelBackend& backend) {
  harness::RandomCase rc = draw_case(seed, index, limits);
  DecodeProblem p = rc.problem;
  if (p.q_dtype == DType::f32) p.q_dtype = DType::bf16;   // the kernels' Q: f16 or bf16
  if (!is_quantized(p.kv_dtype)) p.kv_dtype = p.q_dtype;  // 8-bit caches (a third) stay
  p.head_dim = p.head_dim <= 64 ? 64 : (p.head_dim <= 128 ? 128 : 256);
  if (p.value_dim() != p.head_dim) {  // the kernels' DeepSeek widths, 16-bit caches only
    // V in K's rows: absorbed MLA (576 / 512); its own cache: the model's 192 / 128; the
    // kernels read these widths from 16-bit caches only.
    p.head_dim = rc.shared_kv ? 576 : 192;
    p.head_dim_v = rc.shared_kv ? 512 : 128;
    if (is_quantized(p.kv_dtype)) {
      p.kv_dtype = p.q_dtype;
      p.kv_scales = KvScales::none;
    }
  }
  harness::HostCase c =
      harness::make_case(p, seed ^ static_cast<std::uint64_t>(index), rc.shared_kv);
  CaseReport report;
  report.problem = describe(c.problem, rc.hardware.workers, rc.options.tile_tokens);
  const auto ref = reference::naive_attention(c.problem, c.tensors());
  const auto naive = harness::naive_same_precision(c.problem, c.tensors());
  const std::int32_t tile = rc.options.tile_tokens;
  const std::pair<const char*, PlanOptions> variants[] = {
      {"lean", {.strategy = Strategy::lean, .tile_tokens = tile}},
      {"lean/batch_invariant",
       {.strategy = Strategy::lean,
        .tile_tokens = tile,
        .batch_invariant = true,
        .chunk_tiles = 2}},
      {"split", {.strategy = Strategy::split, .tile_tokens = tile}},
      {"head", {.strategy = Strategy::head, .tile_tokens = tile}},
  };
  for (const auto& [variant, options] : variants) {
    Outcome o{std::string(backend.name()) + " " + variant, false, ""};
    try {
      harness::poison_outputs(c);
      backend.run(c, options, rc.hardware.workers);
      const harness::Accuracy acc = harness::check_accuracy(c, ref, true, &naive);
      o.ok = acc.ok();
      o.detail = accuracy_text(acc);
    } catch (const std::exception& e) {
      o.detail = std::string("threw: ") + e.what();
    }
    report.outcomes.push_back(o);
  }
  return report;
}

}  // namespace leanattn::checks
