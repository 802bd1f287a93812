// What went wrong in a failed GPU run, row by row, so that the first run on a GPU explains
// itself: output rows never written (still the poison pattern), rows with NaN, rows off the
// reference by more than the tolerance, each counted separately for the pairs the plan splits
// (written by a last-arriver merge) and the pairs it computes directly. Host code (tested in
// cuda_host_tests, used by the GPU tests).
#pragma once

#include <string>

#include "harness/host_case.hpp"
#include "leanattn/plan.hpp"
#include "leanattn/reference.hpp"

namespace leanattn::cuda::testing {

struct FailureKinds {
  // [0]: rows of split pairs, [1]: rows of direct pairs.
  int unwritten[2] = {0, 0};
  int nan[2] = {0, 0};
  int mismatch[2] = {0, 0};
  bool any() const;
  // e.g. "split pairs: 16 rows never written; direct pairs: 2 rows NaN" ("" when none).
  std::string summary() const;
};

// c.out as downloaded after poison_outputs() / DeviceCase::poison() and the run.
FailureKinds classify_rows(const harness::HostCase& c, const Plan& plan,
                           const reference::Output& ref, double tolerance);

}  // namespace leanattn::cuda::testing
