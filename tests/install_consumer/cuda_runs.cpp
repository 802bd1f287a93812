// The "cuda" executor's part of the install consumer, built when leanattnConfig.cmake says the
// package holds the CUDA engine (leanattn_WITH_CUDA): executor_names() must name it; on a GPU,
// the consumer's problem in f16 and in device memory, every strategy on 1 to 5 workers (CTAs)
// through make_executor("cuda"), checked against the fp64 reference of the same f16 values;
// without a GPU, a message that these runs were skipped.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <leanattn/core/float16.hpp>
#include <leanattn/cuda_engine.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "consumer_runs.hpp"

namespace consumer {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// `bytes` bytes of device memory, freed on destruction.
class DeviceBytes {
 public:
  explicit DeviceBytes(std::size_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&data_, bytes), "cudaMalloc");
  }
  // A device copy of `host`.
  template <class T>
  explicit DeviceBytes(const std::vector<T>& host) : DeviceBytes(host.size() * sizeof(T)) {
    check(cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  void* get() const { return data_; }
  void poison() { check(cudaMemset(data_, 0xff, bytes_), "cudaMemset"); }  // f16 and f32 NaN
  template <class T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    check(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy (download)");
    return host;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
};

std::vector<std::uint16_t> to_f16(const std::vector<float>& values) {
  std::vector<std::uint16_t> bits;
  for (const float x : values) bits.push_back(leanattn::float_to_f16_bits(x));
  return bits;
}

}  // namespace

int cuda_failures(bool listed) {
  if (!listed) {
    std::printf(
        "FAIL: leanattnConfig.cmake says the package has the CUDA engine, but executor_names() "
        "lacks \"cuda\"\n");
    return 1;
  }
  if (!leanattn::cuda::device_available()) {
    std::printf("make_executor(\"cuda\"): no CUDA device here, its runs skipped\n");
    return 0;
  }
  const leanattn::DecodeProblem p = problem(leanattn::DType::f16);
  // q [batch, q_heads, head_dim]; k, v [batch, capacity, kv_heads, head_dim]; f16 bits.
  const auto rows = static_cast<std::size_t>(p.batch() * p.q_heads);
  const auto d = static_cast<std::size_t>(p.head_dim);
  const auto kv = static_cast<std::size_t>(p.batch() * p.capacity * p.kv_heads) * d;
  const std::vector<std::uint16_t> q = to_f16(normal_values(rows * d, 1));
  const std::vector<std::uint16_t> k = to_f16(normal_values(kv, 2));
  const std::vector<std::uint16_t> v = to_f16(normal_values(kv, 3));
  std::vector<std::uint16_t> host_out(rows * d);
  std::vector<float> host_lse(rows);
  const leanattn::reference::Output ref = leanattn::reference::naive_attention(
      p, leanattn::dense_tensors(p, q.data(), k.data(), v.data(), nullptr, host_out.data(),
                                 host_lse.data()));
  try {
    DeviceBytes dq(q), dk(k), dv(v), out(host_out.size() * 2), lse(host_lse.size() * 4);
    const leanattn::DecodeTensors tensors = leanattn::dense_tensors(
        p, dq.get(), dk.get(), dv.get(), nullptr, out.get(), static_cast<float*>(lse.get()));
    // f16 outputs: their rounding and the kernel's f16 probabilities.
    return failed_runs(
        "make_executor(\"cuda\")", ref, 1e-2, [&](leanattn::Strategy s, std::int32_t workers) {
          out.poison();
          lse.poison();
          const auto executor = leanattn::make_executor("cuda", {.workers = workers});
          executor->run(p, executor->plan(p, {.strategy = s}), tensors);  // the default stream
          check(cudaDeviceSynchronize(), "the run");
          Outputs got;
          for (const std::uint16_t h : out.download<std::uint16_t>()) {
            got.out.push_back(leanattn::f16_bits_to_float(h));
          }
          got.lse = lse.download<float>();
          return got;
        });
  } catch (const std::exception& e) {
    std::printf("FAIL: make_executor(\"cuda\"): %s\n", e.what());
    return 1;
  }
}

}  // namespace consumer
