// ExecutorCache with the CUDA executor: device -1 ("the current device") is keyed as the device it
// means when the executor is asked for, so the explicit ordinal finds the same executor and a
// thread on another GPU gets its own. Skips when no CUDA device is present.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "leanattn/cuda_engine.hpp"
#include "leanattn/executor_cache.hpp"

namespace leanattn::cuda {
namespace {

TEST(CudaExecutorCache, CurrentDeviceIsKeyedAsItsOrdinal) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device (or driver) on this machine";
  ExecutorCache cache(4);
  const std::int32_t current = current_device();
  const auto by_default = cache.get("cuda");  // device -1
  const auto by_ordinal = cache.get("cuda", {.device = current});
  EXPECT_EQ(by_default.get(), by_ordinal.get());
  EXPECT_EQ(cache.size(), 1u);

  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "one CUDA device: the second device's key is not tried";
  const int other = current == 0 ? 1 : 0;
  ASSERT_EQ(cudaSetDevice(other), cudaSuccess);
  const auto on_other = cache.get("cuda");  // device -1 now means `other`
  ASSERT_EQ(cudaSetDevice(current), cudaSuccess);
  EXPECT_NE(on_other.get(), by_default.get());
  EXPECT_EQ(cache.size(), 2u);
}

}  // namespace
}  // namespace leanattn::cuda
