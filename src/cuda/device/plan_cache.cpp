// PlanCache (see plan_cache.hpp).
#include "cuda/device/plan_cache.hpp"

#include <cuda_runtime.h>

#include "cuda/device/cuda_check.hpp"

namespace leanattn::cuda {

namespace {

bool same_segment(const Segment& a, const Segment& b) {
  return a.request == b.request && a.kv_head == b.kv_head && a.tile_begin == b.tile_begin &&
         a.tile_end == b.tile_end && a.kind == b.kind && a.slot == b.slot &&
         a.reduction == b.reduction;
}

bool same_reduction(const Reduction& a, const Reduction& b) {
  return a.request == b.request && a.kv_head == b.kv_head && a.finaliser == b.finaliser &&
         a.slot_begin == b.slot_begin && a.num_slots == b.num_slots;
}

template <class T, class Eq>
bool same_list(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!eq(a[i], b[i])) return false;
  }
  return true;
}

DevicePlan pointers(const void* base, const PlanImage& im) {
  const auto* b = static_cast<const std::byte*>(base);
  return {reinterpret_cast<const std::int32_t*>(b + im.worker_offsets_at),
          reinterpret_cast<const DeviceSegment*>(b + im.segments_at),
          reinterpret_cast<const DeviceReduction*>(b + im.reductions_at),
          reinterpret_cast<const std::int32_t*>(b + im.seq_lens_at)};
}

}  // namespace

bool same_schedule(const Plan& a, const Plan& b) {
  return a.workers == b.workers && a.tile_tokens == b.tile_tokens && a.group_size == b.group_size &&
         a.head_dim == b.head_dim && a.kv_heads == b.kv_heads && a.num_slots == b.num_slots &&
         a.seq_lens == b.seq_lens && a.worker_offsets == b.worker_offsets &&
         same_list(a.segments, b.segments, same_segment) &&
         same_list(a.reductions, b.reductions, same_reduction);
}

std::optional<DevicePlan> PlanCache::find(const Plan& plan) {
  if (last_entry_ != nullptr && same_schedule(*last_plan_, plan)) return last_entry_->device;
  PlanImage im = make_plan_image(plan);
  const auto [lo, hi] = by_hash_.equal_range(image_hash(im));
  for (auto it = lo; it != hi; ++it) {
    if (it->second->image.bytes == im.bytes) {
      last_plan_ = plan;
      last_entry_ = it->second;
      return it->second->device;
    }
  }
  return std::nullopt;
}

DevicePlan PlanCache::upload(const Plan& plan) {
  if (auto found = find(plan)) return *found;
  check_plan(plan);
  Entry& e = entries_.emplace_back();
  e.image = make_plan_image(plan);
  e.buffer = DeviceBuffer(e.image.bytes.size());
  check(cudaMemcpy(e.buffer.data(), e.image.bytes.data(), e.image.bytes.size(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy (plan upload)");
  e.device = pointers(e.buffer.data(), e.image);
  by_hash_.emplace(image_hash(e.image), &e);
  last_plan_ = plan;
  last_entry_ = &e;
  return e.device;
}

void PlanCache::clear() {
  by_hash_.clear();
  last_entry_ = nullptr;
  last_plan_.reset();
  entries_.clear();
}

}  // namespace leanattn::cuda
