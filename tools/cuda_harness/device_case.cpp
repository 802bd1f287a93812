// DeviceCase and run_host_case() (see device_case.hpp).
#include "cuda_harness/device_case.hpp"

#include <cuda_runtime.h>

#include "cuda/device/cuda_check.hpp"

namespace leanattn::cuda {

namespace {

DeviceBuffer upload(const void* data, std::size_t bytes) {
  DeviceBuffer b(bytes);
  if (bytes > 0)
    check(cudaMemcpy(b.data(), data, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
  return b;
}

}  // namespace

DeviceCase::DeviceCase(const harness::HostCase& c)
    : problem_(c.problem),
      q_(upload(c.q.data(), c.q.size())),
      table_(upload(c.block_table.data(), c.block_table.size() * sizeof(std::int32_t))),
      out_(c.out.size()),
      lse_(c.lse.size() * sizeof(float)),
      sinks_(upload(c.sinks.data(), c.sinks.size() * sizeof(float))),
      alibi_slopes_(upload(c.alibi_slopes.data(), c.alibi_slopes.size() * sizeof(float))),
      k_scale_(upload(c.k_scale.data(), c.k_scale.size() * sizeof(float))),
      v_scale_(upload(c.v_scale.data(), c.v_scale.size() * sizeof(float))),
      k_bytes_(c.k.size()),
      v_bytes_(c.v.size()),
      shared_kv_(c.shared_kv) {
  k_.push_back(upload(c.k.data(), c.k.size()));
  v_.push_back(upload(c.v.data(), c.v.size()));
  poison();
}

DecodeTensors DeviceCase::tensors(std::int32_t kv_copy) const {
  const auto i = static_cast<std::size_t>(kv_copy);
  // shared_kv: a null v_cache is V in K's rows (v_cache = k_cache, K's strides).
  DecodeTensors t = dense_tensors(
      problem_, q_.data(), k_.at(i).data(), shared_kv_ ? nullptr : v_.at(i).data(),
      table_.size() > 0 ? table_.as<std::int32_t>() : nullptr, out_.data(), lse_.as<float>());
  t.sinks = problem_.variant.sinks ? sinks_.as<float>() : nullptr;
  t.alibi_slopes = problem_.variant.alibi ? alibi_slopes_.as<float>() : nullptr;
  t.k_scale = k_scale_.size() > 0 ? k_scale_.as<float>() : nullptr;
  t.v_scale = shared_kv_ ? t.k_scale : v_scale_.size() > 0 ? v_scale_.as<float>() : nullptr;
  return t;
}

void DeviceCase::set_kv_copies(std::int32_t copies) {
  while (static_cast<std::int32_t>(k_.size()) < copies) {
    DeviceBuffer k(k_bytes_), v(v_bytes_);
    if (k_bytes_ > 0) {
      check(cudaMemcpy(k.data(), k_[0].data(), k_bytes_, cudaMemcpyDeviceToDevice),
            "cudaMemcpy (K copy)");
    }
    if (v_bytes_ > 0) {
      check(cudaMemcpy(v.data(), v_[0].data(), v_bytes_, cudaMemcpyDeviceToDevice),
            "cudaMemcpy (V copy)");
    }
    k_.push_back(std::move(k));
    v_.push_back(std::move(v));
  }
}

void DeviceCase::poison() {
  if (out_.size() > 0) check(cudaMemset(out_.data(), 0xff, out_.size()), "cudaMemset (out)");
  if (lse_.size() > 0) check(cudaMemset(lse_.data(), 0xff, lse_.size()), "cudaMemset (lse)");
}

void DeviceCase::download(harness::HostCase& c) const {
  check(cudaDeviceSynchronize(), "decode kernel (cudaDeviceSynchronize)");
  if (out_.size() > 0) {
    check(cudaMemcpy(c.out.data(), out_.data(), out_.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy (out)");
  }
  if (lse_.size() > 0) {
    check(cudaMemcpy(c.lse.data(), lse_.data(), lse_.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy (lse)");
  }
}

void run_host_case(Engine& engine, harness::HostCase& c, const Plan& plan) {
  DeviceCase d(c);
  engine.run(c.problem, plan, d.tensors(), nullptr);
  d.download(c);
}

}  // namespace leanattn::cuda
