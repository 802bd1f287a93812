// make_plan_image() (see plan_image.hpp).
#include "cuda/device/plan_image.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "leanattn/error.hpp"

namespace leanattn::cuda {

namespace {

std::size_t align16(std::size_t x) {
  return (x + 15) / 16 * 16;
}

template <class T>
void put(std::vector<std::byte>& bytes, std::size_t at, const T* data, std::size_t count) {
  if (count > 0) std::memcpy(bytes.data() + at, data, count * sizeof(T));
}

}  // namespace

std::vector<DeviceSegment> device_segments(const Plan& plan) {
  std::vector<DeviceSegment> segments;
  segments.reserve(plan.segments.size());
  for (const Segment& s : plan.segments) {
    const bool split = s.kind != SegmentKind::direct;
    const KeyRange t = plan.tile_keys(s.request, s.tile_begin, s.tile_end);
    segments.push_back({s.request, s.kv_head, static_cast<std::int32_t>(t.begin),
                        static_cast<std::int32_t>(t.end), split ? s.slot : -1,
                        split ? s.reduction : -1});
  }
  return segments;
}

std::vector<DeviceReduction> device_reductions(const Plan& plan) {
  std::vector<DeviceReduction> reductions;
  reductions.reserve(plan.reductions.size());
  for (const Reduction& r : plan.reductions) {
    reductions.push_back({r.request, r.kv_head, r.slot_begin, r.num_slots});
  }
  return reductions;
}

PlanImage make_plan_image(const Plan& plan) {
  constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
  require(plan.segments.size() < kMax && plan.reductions.size() < kMax, "plan",
          [] { return "has more segments or reductions than the CUDA kernel indexes (2^31)"; });
  require(plan.worker_offsets.size() == static_cast<std::size_t>(plan.workers) + 1, "plan",
          [] { return "worker_offsets must have workers + 1 entries"; });

  PlanImage im;
  im.workers = plan.workers;
  im.tile_tokens = plan.tile_tokens;
  im.group_size = plan.group_size;
  const std::int32_t header[8] = {plan.workers,
                                  static_cast<std::int32_t>(plan.segments.size()),
                                  static_cast<std::int32_t>(plan.reductions.size()),
                                  plan.batch(),
                                  plan.tile_tokens,
                                  plan.group_size,
                                  plan.head_dim,
                                  plan.num_slots};
  im.worker_offsets_at = align16(sizeof header);
  im.segments_at = align16(im.worker_offsets_at + plan.worker_offsets.size() * 4);
  im.reductions_at = align16(im.segments_at + plan.segments.size() * sizeof(DeviceSegment));
  im.seq_lens_at = align16(im.reductions_at + plan.reductions.size() * sizeof(DeviceReduction));
  im.query_start_loc_at = align16(im.seq_lens_at + plan.seq_lens.size() * 4);
  im.has_query_start_loc = !plan.query_start_loc.empty();
  im.bytes.assign(align16(im.query_start_loc_at + plan.query_start_loc.size() * 4), std::byte{0});

  put(im.bytes, 0, header, 8);
  std::vector<std::int32_t> offsets(plan.worker_offsets.begin(), plan.worker_offsets.end());
  put(im.bytes, im.worker_offsets_at, offsets.data(), offsets.size());
  const std::vector<DeviceSegment> segments = device_segments(plan);
  put(im.bytes, im.segments_at, segments.data(), segments.size());
  const std::vector<DeviceReduction> reductions = device_reductions(plan);
  put(im.bytes, im.reductions_at, reductions.data(), reductions.size());
  put(im.bytes, im.seq_lens_at, plan.seq_lens.data(), plan.seq_lens.size());
  put(im.bytes, im.query_start_loc_at, plan.query_start_loc.data(), plan.query_start_loc.size());
  return im;
}

std::uint64_t image_hash(const PlanImage& image) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : image.bytes) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace leanattn::cuda
