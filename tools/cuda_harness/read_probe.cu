// measure_device_read_bandwidth() (see read_probe.hpp): a grid-stride sum of 16-byte words with
// streaming loads (ld.global.cs), four loads in flight per thread, one result word per CTA so the
// reads cannot be optimised away.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/device/cuda_check.hpp"
#include "cuda/device/device_buffer.hpp"
#include "cuda_harness/read_probe.hpp"

namespace leanattn::cuda {

namespace {

constexpr int kProbeThreads = 512;

__global__ void __launch_bounds__(kProbeThreads)
    read_kernel(const uint4* data, std::int64_t n, unsigned* sink) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  unsigned acc = 0;
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldcs(data + i);
    const uint4 b = __ldcs(data + i + stride);
    const uint4 c = __ldcs(data + i + 2 * stride);
    const uint4 d = __ldcs(data + i + 3 * stride);
    acc += a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n; i += stride) acc += __ldcs(data + i).x;
  acc = __reduce_add_sync(0xffffffffu, acc);
  if (threadIdx.x % 32 == 0) atomicAdd(sink + blockIdx.x, acc);
}

}  // namespace

cpu::ProbeResult measure_device_read_bandwidth(std::int64_t bytes, std::int32_t passes) {
  const std::int64_t words = std::max<std::int64_t>(bytes / 16, 1);
  DeviceBuffer data(static_cast<std::size_t>(words) * 16);
  check(cudaMemset(data.data(), 0x5a, data.size()), "cudaMemset (probe buffer)");
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_kernel, kProbeThreads, 0),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor (probe)");
  const int blocks = std::max(1, per_sm * sms);
  DeviceBuffer sink(static_cast<std::size_t>(blocks) * sizeof(unsigned));
  check(cudaMemset(sink.data(), 0, sink.size()), "cudaMemset (probe sink)");

  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> gbps;
  for (std::int32_t pass = 0; pass <= passes; ++pass) {  // pass 0 warms up
    check(cudaEventRecord(start), "cudaEventRecord");
    read_kernel<<<blocks, kProbeThreads>>>(data.as<const uint4>(), words, sink.as<unsigned>());
    check(cudaGetLastError(), "probe kernel launch");
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "probe kernel");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (pass > 0) gbps.push_back(static_cast<double>(words) * 16.0 / (ms * 1e-3) / 1e9);
  }
  static_cast<void>(cudaEventDestroy(start));
  static_cast<void>(cudaEventDestroy(stop));
  std::sort(gbps.begin(), gbps.end());
  cpu::ProbeResult r;
  r.bytes = words * 16;
  r.threads = blocks;
  r.median_gbps = gbps.empty() ? 0.0 : gbps[gbps.size() / 2];
  r.best_gbps = gbps.empty() ? 0.0 : gbps.back();
  return r;
}

}  // namespace leanattn::cuda
