// The "cuda" executor's part of the install consumer for a package without the CUDA engine
// (leanattn_WITH_CUDA off in leanattnConfig.cmake): executor_names() must not name it.
#include <cstdio>

#include "consumer_runs.hpp"

namespace consumer {

int cuda_failures(bool listed) {
  if (listed) {
    std::printf(
        "FAIL: executor_names() lists \"cuda\", but leanattnConfig.cmake says the package has no "
        "CUDA engine\n");
    return 1;
  }
  std::printf("cuda: not in this package (a build without the CUDA engine)\n");
  return 0;
}

}  // namespace consumer
