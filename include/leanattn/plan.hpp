// Plan: the schedule of one decode step as plain data. Made by make_plan() (planner.hpp), read
// by every executor (the plan interpreter, the CPU engine, the CUDA engine), printed by
// `leanattn plan`. See docs/design.md for the format and a worked example.
//
// Vocabulary. A *pair* is one (request, KV head); all query rows of a KV head (the GQA group x
// the q_len query tokens) are computed together, so a pair owns group_size output rows. A pair's
// planned keys, [first_key(request), seq_len) (a sliding window starts them after 0:
// core/variant_rules.hpp), are cut into *lean tiles* of tile_tokens tokens (the last one may be
// shorter). A *segment* is a contiguous
// range of one pair's tiles done by one worker. A pair done by one segment is written directly;
// otherwise every segment writes its softmax state to a workspace *slot*, and the pair's
// *reduction* merges the slots in its fixed order (tile order) into the output.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "leanattn/core/variant_rules.hpp"
#include "leanattn/problem.hpp"

namespace leanattn {

enum class Strategy : std::uint8_t {
  lean,   // stream-K: the line of all tiles of all pairs cut into equal ranges, one per worker
  split,  // FlashDecoding: every pair cut into the same number of splits (the executor's rule)
  head,   // one unit per pair (FlashAttention-2 decode without split-KV)
};

std::string_view strategy_name(Strategy s);
Strategy parse_strategy(std::string_view text, const char* argument = "strategy");

// The order in which lean numbers the tiles before cutting the line into equal ranges; for split
// and head, how their units are dealt (head_major: in pair order to the first free worker;
// token_major: contiguously in request -> chunk -> KV head order; planner.hpp).
enum class LineOrder : std::uint8_t {
  automatic,    // the executor's choice: head_major for make_plan, token_major for the CPU engine
  head_major,   // request -> KV head -> tile (the paper's order): a worker's range crosses at most
                //   one split pair at each end; what a GPU block, working on one pair at a time,
                //   wants
  token_major,  // request -> tile -> all KV heads: ranges are cut at whole tile rows, so a worker
                //   owns whole token rows of the cache (every KV head of a token is adjacent in
                //   memory) and streams memory contiguously; balance is within one row (kv_heads
                //   tiles), and a worker may split one pair per KV head at each end
};

std::string_view line_order_name(LineOrder o);
LineOrder parse_line_order(std::string_view text, const char* argument = "order");

enum class SegmentKind : std::uint8_t {
  direct,    // the whole pair: compute and write the output rows
  finalise,  // the pair's first tiles: write state to `slot`; the worker that would wait and merge
  partial,   // a later piece of the pair: write state to `slot`
};

std::string_view segment_kind_name(SegmentKind k);

struct Segment {
  std::int32_t request = 0;
  std::int32_t kv_head = 0;
  std::int32_t tile_begin = 0;  // first tile of the pair, inclusive
  std::int32_t tile_end = 0;    // end exclusive; tile_begin == tile_end only for an empty pair
  SegmentKind kind = SegmentKind::direct;
  std::int32_t slot = -1;       // workspace slot (finalise and partial), -1 for direct
  std::int32_t reduction = -1;  // index in Plan::reductions (finalise and partial), else -1
  bool operator==(const Segment&) const = default;
};

// A pair whose tiles are spread over several segments.
struct Reduction {
  std::int32_t request = 0;
  std::int32_t kv_head = 0;
  std::int32_t finaliser = 0;   // worker holding the pair's first tile (its finalise segment)
  std::int32_t slot_begin = 0;  // its slots are [slot_begin, slot_begin + num_slots), merged in
  std::int32_t num_slots = 0;   // this order: slot_begin + i holds the i-th piece in tile order
  bool operator==(const Reduction&) const = default;
};

struct Plan {
  // What the plan was made for.
  Strategy strategy = Strategy::lean;
  LineOrder order = LineOrder::head_major;  // how the tiles were walked (every strategy)
  std::int32_t workers = 0;
  std::int32_t tile_tokens = 0;
  std::int32_t splits = 0;  // split: splits per pair; lean, head: 0
  bool batch_invariant = false;
  std::int32_t chunk_tiles = 0;  // batch-invariant lean: tiles per fixed chunk, else 0
  std::int32_t kv_heads = 0;
  std::int32_t group_size = 0;  // output rows per pair (query heads per KV head x q_len; with
                                //   query_start_loc the bound, a request's own fewer)
  std::int32_t head_dim = 0;
  std::int32_t head_dim_v = 0;         // V's and the output's width (problem.value_dim())
  std::vector<std::int32_t> seq_lens;  // [batch]
  std::int32_t q_len = 1;              // query tokens per request (the bound with query_start_loc)
  std::vector<std::int32_t> query_start_loc;  // [batch + 1] or empty: the problem's
  AttentionVariant variant;                   // the settings it was made for (a run must match)

  // The schedule.
  std::vector<std::int64_t> worker_offsets;  // [workers + 1]: worker w's segments are
  std::vector<Segment> segments;             //   segments[worker_offsets[w], worker_offsets[w+1])
  std::vector<Reduction> reductions;         // in pair order
  std::int32_t num_slots = 0;
  std::int64_t total_tiles = 0;

  // Every field equal (executors recognise a plan they made or checked before).
  bool operator==(const Plan&) const = default;

  std::int32_t batch() const { return static_cast<std::int32_t>(seq_lens.size()); }
  std::int32_t query_len(std::int32_t request) const {
    return request_query_len(query_start_loc, q_len, request);
  }
  // First key planned for `request`: keys before it are seen by no query row (window); a
  // request without query tokens plans none.
  std::int64_t first_key(std::int32_t request) const {
    const std::int32_t n = query_len(request);
    if (n == 0) return seq_lens[request];
    return first_planned_key(seq_lens[request], n, variant.window_left);
  }
  std::int32_t tiles_of(std::int32_t request) const {
    const std::int64_t keys = seq_lens[request] - first_key(request);
    return static_cast<std::int32_t>(ceil_div<std::int64_t>(keys, tile_tokens));
  }
  // Key positions [begin, end) of tiles [tile_begin, tile_end) of `request`.
  KeyRange tile_keys(std::int32_t request, std::int32_t tile_begin, std::int32_t tile_end) const {
    const std::int64_t first = first_key(request);
    const std::int64_t len = seq_lens[request];
    const std::int64_t b = first + static_cast<std::int64_t>(tile_begin) * tile_tokens;
    const std::int64_t e = first + static_cast<std::int64_t>(tile_end) * tile_tokens;
    return {b < len ? b : len, e < len ? e : len};
  }
  std::span<const Segment> worker_segments(std::int32_t worker) const {
    const auto b = static_cast<std::size_t>(worker_offsets[worker]);
    const auto e = static_cast<std::size_t>(worker_offsets[worker + 1]);
    return std::span<const Segment>(segments).subspan(b, e - b);
  }
  // Tiles worker `worker` computes (its load).
  std::int64_t worker_tiles(std::int32_t worker) const;
};

// Byte layout of the workspace an executor needs for `plan` (all arrays 64-byte aligned):
//   o:        float [num_slots, group_size, head_dim_v]  unnormalised partial outputs
//   m, l:     float [num_slots, group_size]            running max and running sum per row
//   counters: uint32 [reductions]                      arrival counters (last arriver merges)
// Its size is O(workers x group_size x head_dim) for lean (num_slots <= 2 x workers), and
// O(splits x batch x kv_heads x group_size x head_dim) for split.
struct WorkspaceLayout {
  std::int64_t o_offset = 0;
  std::int64_t m_offset = 0;
  std::int64_t l_offset = 0;
  std::int64_t counters_offset = 0;
  std::int64_t bytes = 0;
};

WorkspaceLayout workspace_layout(const Plan& plan);

// Checks every structural invariant of a plan and throws Error("plan", ...) naming the first one
// broken: coverage of each pair's tiles exactly once, segment kinds consistent with the
// reductions, slots used once, reductions in tile order. Executors call it on plans they did not
// make; tests call it on every plan.
void check_plan(const Plan& plan);

// The working memory of check_plan. An executor that keeps one across runs checks a plan of the
// same size or smaller without allocating (cpu::Engine does: a reused plan allocates nothing).
struct PlanCheckBuffers {
  std::vector<std::int64_t> order;
  std::vector<std::int32_t> worker_of;
  std::vector<char> slot_used;
};
void check_plan(const Plan& plan, PlanCheckBuffers& buffers);

}  // namespace leanattn
