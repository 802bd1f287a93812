// PlanCache: the device copies of the plans an engine has run, keyed by content (PlanImage
// bytes), so a plan is uploaded once and reused by every later launch, including launches
// replayed from a CUDA graph. The last plan used is remembered with a field-by-field copy, so the
// common case (the same plan again) costs one comparison and no allocation.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "cuda/common/kernel_params.hpp"
#include "cuda/device/device_buffer.hpp"
#include "cuda/device/plan_image.hpp"
#include "leanattn/plan.hpp"

namespace leanattn::cuda {

// Device pointers of one uploaded plan.
struct DevicePlan {
  const std::int32_t* worker_offsets = nullptr;
  const DeviceSegment* segments = nullptr;
  const DeviceReduction* reductions = nullptr;
  const std::int32_t* seq_lens = nullptr;
};

// True when two plans schedule the same work (every field the kernel reads).
bool same_schedule(const Plan& a, const Plan& b);

class PlanCache {
 public:
  // The uploaded copy of `plan`, or nullopt when it has not been uploaded.
  std::optional<DevicePlan> find(const Plan& plan);
  // Uploads `plan` (check_plan() first; a synchronous copy) and returns it.
  DevicePlan upload(const Plan& plan);
  void clear();
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    PlanImage image;
    DeviceBuffer buffer;
    DevicePlan device;
  };
  std::list<Entry> entries_;  // stable addresses
  std::unordered_multimap<std::uint64_t, Entry*> by_hash_;
  std::optional<Plan> last_plan_;
  const Entry* last_entry_ = nullptr;
};

}  // namespace leanattn::cuda
