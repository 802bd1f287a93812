// kernel_handle<Config>(): the launch description of one configuration of the decode kernel.
// Included by each generated instantiation file (build/.../generated/decode_*.cu, made by
// src/cuda/kernel_configs.cmake from instantiation.cu.in), which instantiates it for one row of
// the configuration table; read through kernel_registry.hpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/kernel_shape.hpp"
#include "cuda/kernel/decode_kernel.cuh"
#include "cuda/kernel_registry.hpp"

namespace leanattn::cuda {

template <DType Type>
struct ElementOf;
template <>
struct ElementOf<DType::f16> {
  using type = __half;
};
template <>
struct ElementOf<DType::bf16> {
  using type = __nv_bfloat16;
};

template <class Config>
KernelHandle kernel_handle() {
  using T = typename ElementOf<Config::kDType>::type;
  using Shape = KernelShape<Config::kHeadDim, Config::kWarpsM, Config::kKvBits, Config::kHeadDimV,
                            Config::kWarpsV, Config::kVFromK>;
  KernelHandle h;
  h.dtype = Config::kDType;
  h.kv_bits = Shape::kKvBits;
  h.head_dim = Shape::kHeadDim;
  h.head_dim_v = Shape::kHeadDimV;
  h.warps_m = Shape::kWarpsM;
  h.warps_v = Shape::kWarpsV;
  h.v_from_k = Shape::kVFromK;
  h.rows = Shape::kRows;
  h.block_n = Shape::kBlockN;
  h.stages = Shape::kStages;
  h.threads = Shape::kThreads;
  h.smem_bytes = Shape::kSmemBytes;
  h.merge_capacity = Shape::kMergeCapacity;
  h.merge_max_rows = Shape::kMergeMaxRows;
  h.kernel = reinterpret_cast<const void*>(&decode_kernel<T, Shape>);
  h.name = std::string(dtype_name(Config::kDType)) + (Shape::kKv8 ? "_kv8" : "") + "_d" +
           std::to_string(Shape::kHeadDim) +
           (Shape::kHeadDimV != Shape::kHeadDim ? "_v" + std::to_string(Shape::kHeadDimV) : "") +
           (Shape::kVFromK ? "k" : "") + "_wm" + std::to_string(Shape::kWarpsM) +
           (Shape::kWarpsV > 1 ? "_wv" + std::to_string(Shape::kWarpsV) : "");
  return h;
}

}  // namespace leanattn::cuda
