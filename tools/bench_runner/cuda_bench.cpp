// run_cuda_case() and the device helpers of `leanattn bench --backend cuda` (see cuda_bench.hpp).
#include "bench_runner/cuda_bench.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "bench_runner/bench_backend.hpp"
#include "bench_runner/bench_result.hpp"
#include "cuda/device/cuda_check.hpp"
#include "cuda/kernel_registry.hpp"
#include "cuda_harness/busy_wait.hpp"
#include "cuda_harness/device_case.hpp"
#include "cuda_harness/read_probe.hpp"
#include "harness/accuracy.hpp"
#include "harness/host_case.hpp"
#include "leanattn/cuda_engine.hpp"
#include "leanattn/error.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::bench {

namespace {

// CUDA events for one timed launch, created once and reused.
struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  EventPair() {
    cuda::check(cudaEventCreate(&start), "cudaEventCreate");
    cuda::check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~EventPair() {
    static_cast<void>(cudaEventDestroy(start));
    static_cast<void>(cudaEventDestroy(stop));
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  double elapsed_us() const {
    float ms = 0.0f;
    cuda::check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1000.0;
  }
};

void require_device() {
  if (!cuda::device_available()) {
    throw cuda::CudaError("leanattn::cuda: no CUDA device (or driver) is available here", 0);
  }
}

}  // namespace

CaseResult run_cuda_case(const DecodeProblem& problem, const BenchConfig& cfg, double probe_gbps,
                         const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  validate(problem);
  require_device();
  cuda::Engine engine({.workers = cfg.workers});
  require(engine.can_run(problem), "problem", [&] { return engine.why_not(problem); });

  say("filling " + std::to_string(problem.kv_bytes(cfg.shared_kv) >> 20) + " MiB of K and V");
  harness::HostCase c = harness::make_case(problem, 2026, cfg.shared_kv);
  cuda::DeviceCase d(c);
  CaseResult result;
  result.probe_gbps = probe_gbps;  // the run's device probe
  result.problem = c.problem;
  result.shared_kv = cfg.shared_kv;
  result.kv_bytes = c.problem.kv_bytes(cfg.shared_kv);
  const std::int64_t buffer_bytes = static_cast<std::int64_t>(c.k.size() + c.v.size());
  const std::int32_t copies = kv_copies(buffer_bytes, cfg.rotate_bytes);
  d.set_kv_copies(copies);
  result.kv_copies = copies;
  const auto kernel = cuda::find_kernel(c.problem);
  result.simd = engine.device().name + " " + (kernel ? kernel->name : std::string("?"));

  std::vector<Plan> plans;
  std::vector<std::string> names;
  // No head-major row: head-major is already lean's order on the GPU.
  for (const NamedOptions& v : bench_variants(cfg, false)) {
    plans.push_back(engine.plan(c.problem, v.options));
    names.push_back(v.name);
  }
  result.workers = plans.empty() ? 0 : plans.front().workers;
  std::vector<cuda::DeviceBuffer> workspaces;
  for (const Plan& p : plans) {
    workspaces.emplace_back(static_cast<std::size_t>(engine.workspace_bytes(p)));
    engine.prepare(c.problem, p, workspaces.back().data(), nullptr);
  }

  say("timing " + std::to_string(plans.size()) + " plans x " + std::to_string(cfg.repeat) +
      " launches");
  std::vector<std::vector<EventPair>> events(plans.size());
  for (auto& e : events) e = std::vector<EventPair>(static_cast<std::size_t>(cfg.repeat) + 1);
  std::int32_t next = 0;
  for (std::int32_t rep = 0; rep <= cfg.repeat; ++rep) {  // rep 0 warms up
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const EventPair& e = events[i][static_cast<std::size_t>(rep)];
      const DecodeTensors t = d.tensors(next++ % copies);
      cuda::busy_wait(50.0, nullptr);  // the GPU waits for nothing the host does below
      cuda::check(cudaEventRecord(e.start), "cudaEventRecord");
      engine.run(c.problem, plans[i], t, workspaces[i].data(), nullptr);
      cuda::check(cudaEventRecord(e.stop), "cudaEventRecord");
    }
  }
  cuda::check(cudaDeviceSynchronize(), "decode kernel (timed launches)");

  say("checking against the fp64 reference");
  const ReferenceSample sample = reference_sample(c, cfg);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    std::vector<double> us;
    for (std::size_t rep = 1; rep < events[i].size(); ++rep)
      us.push_back(events[i][rep].elapsed_us());
    d.poison();
    engine.run(c.problem, plans[i], d.tensors(), workspaces[i].data(), nullptr);
    harness::poison_outputs(c);
    d.download(c);
    const harness::Accuracy a =
        harness::check_accuracy(c, sample.ref, true, sample.naive, sample.rows);
    result.results.push_back(
        strategy_result(names[i], plans[i], us, result.kv_bytes, probe_gbps, 0.0, a));
  }
  return result;
}

cpu::ProbeResult measure_cuda_read_bandwidth(std::int64_t bytes, std::int32_t passes) {
  require_device();
  return cuda::measure_device_read_bandwidth(bytes, passes);
}

std::string cuda_device_description() {
  require_device();
  cuda::Engine engine;
  const cuda::DeviceInfo& d = engine.device();
  return d.name + ", " + std::to_string(d.sm_count) + " SMs, sm_" + std::to_string(d.cc_major) +
         std::to_string(d.cc_minor) + ", " + std::to_string(d.l2_bytes >> 20) + " MiB L2, " +
         std::to_string(d.memory_bytes >> 30) + " GiB";
}

std::int64_t cuda_device_memory() {
  require_device();
  std::size_t free_bytes = 0, total = 0;
  cuda::check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return static_cast<std::int64_t>(free_bytes);
}

namespace {

// The CUDA engine for `leanattn bench --backend cuda`: one device probe for the whole run.
class CudaBenchBackend final : public BenchBackend {
 public:
  std::string device() const override { return cuda_device_description(); }
  std::string_view probe_workers(std::int32_t) const override { return "CTAs"; }
  // At least 4 GiB (far beyond L2), as large as the largest case's K and V.
  std::int64_t probe_bytes(std::int64_t largest_kv) const override {
    return std::max<std::int64_t>(largest_kv, 4ll << 30);
  }
  std::int64_t host_probe_bytes(std::int64_t) const override { return 0; }
  void check_config(const BenchConfig&) const override {}
  cpu::ProbeResult probe(std::int64_t bytes, const BenchConfig&) override {
    const cpu::ProbeResult r = measure_cuda_read_bandwidth(bytes, 7);
    probe_gbps_ = r.median_gbps;
    return r;
  }
  CaseResult run_case(const DecodeProblem& problem, const BenchConfig& cfg,
                      const std::function<void(const std::string&)>& progress) override {
    return run_cuda_case(problem, cfg, probe_gbps_, progress);
  }

 private:
  double probe_gbps_ = 0.0;
};

}  // namespace

std::unique_ptr<BenchBackend> make_cuda_bench_backend() {
  return std::make_unique<CudaBenchBackend>();
}

}  // namespace leanattn::bench
