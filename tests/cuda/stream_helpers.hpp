// The GPU tests' stream helpers: captured(), a graph of what a function launches on a stream;
// stream_us_per_call(), GPU time per call of a step enqueued on a stream, from two CUDA events
// recorded around `calls` calls (the host's enqueue work included where it stalls the stream), for
// the [device-plan], [host-plan] and [planner-cost] lines.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

namespace leanattn::cuda {

// A graph of whatever `capture` launches on `stream` (failed CUDA calls reported by gtest).
inline cudaGraphExec_t captured(cudaStream_t stream, auto&& capture) {
  EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  capture();
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  return exec;
}

// Calls step(i) for i in [0, calls) between two events on `stream`, waits for the second, and
// returns the elapsed microseconds per call (0 after a failed CUDA call, reported by gtest).
template <class Step>
double stream_us_per_call(cudaStream_t stream, int calls, Step&& step) {
  cudaEvent_t start = nullptr, end = nullptr;
  EXPECT_EQ(cudaEventCreate(&start), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&end), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(start, stream), cudaSuccess);
  for (int i = 0; i < calls; ++i) step(i);
  EXPECT_EQ(cudaEventRecord(end, stream), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(end), cudaSuccess);
  float ms = 0.0f;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(end), cudaSuccess);
  return 1000.0 * ms / calls;
}

}  // namespace leanattn::cuda
