// The install consumer: plans and runs a small ragged decode (an empty request included) with
// every strategy on 1 to 5 workers, on the CPU engine of the installed package and through its
// executor seam (executor_names(), make_executor("cpu"); "cuda" too in a package with the CUDA
// engine, on a GPU, else said skipped: cuda_runs.cpp), and checks each output against the
// package's fp64 reference. Exit status 0 when every run agrees.
#include <cstdio>
#include <leanattn/leanattn.hpp>
#include <limits>
#include <string>
#include <vector>

#include "consumer_runs.hpp"

int main() {
  if (leanattn::version() != LEANATTN_EXPECTED_VERSION) {
    std::printf("FAIL: headers say %s, the package %s\n", leanattn::version().data(),
                LEANATTN_EXPECTED_VERSION);
    return 1;
  }
  const leanattn::DecodeProblem p = consumer::problem(leanattn::DType::f32);

  // q [batch, q_heads, head_dim]; k, v [batch, capacity, kv_heads, head_dim].
  const auto rows = static_cast<std::size_t>(p.batch() * p.q_heads);
  const auto d = static_cast<std::size_t>(p.head_dim);
  const auto kv = static_cast<std::size_t>(p.batch() * p.capacity * p.kv_heads) * d;
  const std::vector<float> q = consumer::normal_values(rows * d, 1);
  const std::vector<float> k = consumer::normal_values(kv, 2);
  const std::vector<float> v = consumer::normal_values(kv, 3);
  std::vector<float> out(rows * d), lse(rows);
  const leanattn::DecodeTensors tensors =
      leanattn::dense_tensors(p, q.data(), k.data(), v.data(), nullptr, out.data(), lse.data());
  const leanattn::reference::Output ref = leanattn::reference::naive_attention(p, tensors);

  // `run` on out and lse, poisoned first.
  auto on_host = [&](const auto& run) {
    out.assign(out.size(), std::numeric_limits<float>::quiet_NaN());
    lse.assign(lse.size(), std::numeric_limits<float>::quiet_NaN());
    run();
    return consumer::Outputs{out, lse};
  };
  int failures = consumer::failed_runs("cpu::Engine", ref, 1e-4,
                                       [&](leanattn::Strategy s, std::int32_t workers) {
                                         return on_host([&] {
                                           leanattn::cpu::Engine engine({.workers = workers});
                                           engine.run(p, engine.plan(p, {.strategy = s}), tensors);
                                         });
                                       });

  // The seam: "cpu" first, then what else this package has.
  const std::vector<std::string> names = leanattn::executor_names();
  std::string listed;
  bool cuda = false;
  for (const std::string& name : names) {
    listed += (listed.empty() ? "" : ", ") + name;
    cuda = cuda || name == "cuda";
    if (name != "cpu" && name != "cuda") {
      std::printf("FAIL: executor_names() lists \"%s\", which this consumer does not know\n",
                  name.c_str());
      ++failures;
    }
  }
  std::printf("executors: %s\n", listed.c_str());
  if (names.empty() || names.front() != "cpu") {
    std::printf("FAIL: executor_names() does not start with \"cpu\"\n");
    ++failures;
  }
  if (leanattn::make_executor("cpu")->memory() != leanattn::Memory::host) {
    std::printf("FAIL: the \"cpu\" executor does not run on host memory\n");
    ++failures;
  }
  failures += consumer::failed_runs(
      "make_executor(\"cpu\")", ref, 1e-4, [&](leanattn::Strategy s, std::int32_t workers) {
        return on_host([&] {
          const auto executor = leanattn::make_executor("cpu", {.workers = workers});
          executor->run(p, executor->plan(p, {.strategy = s}), tensors);
        });
      });
  failures += consumer::cuda_failures(cuda);

  std::printf("install consumer: leanattn %s, executors %s: %s\n", leanattn::version().data(),
              listed.c_str(), failures == 0 ? "every run agrees" : "FAILED");
  return failures == 0 ? 0 : 1;
}
