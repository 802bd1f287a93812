// PlanCache: the device copies of the plans an engine has run, keyed by content (PlanImage
// bytes), so a plan is uploaded once and reused by every later launch, including launches
// replayed from a CUDA graph. The last plan used is remembered with a field-by-field copy, so the
// common case (the same plan again) costs one comparison and no allocation.
//
// In serving, seq_lens (part of the plan) change every decode step, so uploads are on the hot
// path: an upload is a cudaMemcpyAsync on the launch stream from the entry's pinned staging (the
// kernel is ordered after it on any stream kind), and the cache holds at most `capacity` plans,
// least recently used first out; an evicted entry's device and staging buffers are reused. An
// entry is reused only after the last launch that read it has finished (its event), and entries
// used by a launch that was captured into a CUDA graph are never evicted (the graph keeps
// reading them) until clear(). No CUDA types here: streams are void* (cudaStream_t).
#pragma once

#include <cstddef>
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
  const std::int32_t* query_start_loc = nullptr;  // null: one q_len for every request
};

// True when two plans schedule the same work (every field the kernel reads).
bool same_schedule(const Plan& a, const Plan& b);

inline constexpr std::size_t kDefaultPlanCacheEntries = 64;

class PlanCache {
 public:
  explicit PlanCache(std::size_t capacity = kDefaultPlanCacheEntries) : capacity_(capacity) {}

  // The uploaded copy of `plan` (now the most recently used), or nullopt. Host work only.
  std::optional<DevicePlan> find(const Plan& plan);
  // Uploads `plan` (check_plan() first) asynchronously on `stream` and returns it. Must not be
  // called while `stream` is capturing (it may allocate and wait for an old launch).
  DevicePlan upload(const Plan& plan, void* stream);
  // Before a launch on `stream` of the plan find()/upload() returned last: orders the stream
  // after the upload when that was on another stream (not while capturing: prepare() and
  // synchronise before a capture).
  void before_launch(void* stream, bool capturing);
  // After that launch: records when the entry is free again, or (capturing) keeps it for good.
  void launched(void* stream, bool capturing);

  void clear();
  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    PlanImage image;
    std::uint64_t hash = 0;
    DeviceBuffer buffer;
    PinnedBuffer staging;
    std::optional<Event> done;      // recorded after the last launch that read it
    std::optional<Event> uploaded;  // recorded after the upload's copy
    void* upload_stream = nullptr;
    bool upload_seen = true;  // no launch on another stream can precede the copy
    bool captured = false;    // read by a captured graph: never evicted
    DevicePlan device;
  };
  using Entries = std::list<Entry>;  // most recently used first; stable addresses
  Entry& entry_for_upload();
  void touch(Entries::iterator it);

  std::size_t capacity_;
  Entries entries_;
  std::unordered_multimap<std::uint64_t, Entries::iterator> by_hash_;
  std::optional<Plan> last_plan_;
  Entry* last_entry_ = nullptr;  // == &*last_it_
  Entries::iterator last_it_;
};

}  // namespace leanattn::cuda
