// One GGML_OP_FLASH_ATTN_EXT node of a llama.cpp graph, computed by leanattn's CPU engine: what
// the backend takes (why_not: "" when taken, else the reason it declines, shape and type rules
// only, since the scheduler asks before any data exists) and how a taken node becomes one
// leanattn decode call (FlashAttnRunner). The node, as ggml defines it (ggml.h,
// ggml_flash_attn_ext; ggml-cpu/ops.cpp computes it):
//   q    [Dk, n_rows, n_head, n_stream]     f32, any strides (a permuted view)
//   k    [Dk, n_kv, n_head_kv, n_stream]    the cache, a view read in place
//   v    [Dv, n_kv, n_head_kv, n_stream]    not transposed
//   mask [n_kv, n_rows_pad, 1 or n_head, 1 or n_stream]  f16, contiguous, additive (-inf hides)
//   sinks [n_head] f32 (src[4]), optional
//   dst  [Dv, n_head, n_rows, n_stream]     f32, contiguous
//   op_params: scale, max_bias (ALiBi: the mask times the head's slope), logit_softcap,
//   precision, n_kv_max (a sparsity hint of newer versions)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leanattn/cpu_engine.hpp"
#include "mask_shape.hpp"

struct ggml_tensor;

namespace leanattn::llama_cpp {

// Query rows per stream up to which each row is a request of its own (decode: the rows of a
// unified cache's slots see different cells, and each reads only its own). Above it
// (prompt micro-batches), each stream is one request whose rows are its query tokens: K and V
// are read once for all of them, the mask read in place as each row's bias.
inline constexpr std::int64_t kMaxRows = 8;

// "" when the backend computes `node` (a FLASH_ATTN_EXT node); otherwise why not, naming the
// setting (the node then stays on ggml's CPU backend). Prompts that ggml's tiled prefill path
// would compute (f16 or f32 K and V, 64 rows and more) are taken too: the CPU engine's many-rows
// path runs them 2.1-3.2x faster (bench/results/prefill-vs-ggml-amd-epyc-2c-2026-12-07.txt).
std::string why_not(const ggml_tensor* node);

// Computes taken nodes with the CPU engine. Up to kMaxRows rows per stream, each (stream, query
// row) becomes a request of its own reading keys [0, last visible cell] of its stream's cache, in
// place, or from its first visible cell on where rows start further in (a window covering every
// row's span: a unified cache's slots); the mask becomes a bias only when it hides a cell inside
// that range or adds a non-zero value (ALiBi scales it by the head's slope), so a plain decode
// step runs the engine's unmasked path. Above, each stream is a request of n_rows query tokens,
// the mask read in place as an f16 bias: causal (with a window where the mask has one) when every
// stream's mask is causal-shaped (mask_shape.hpp: row i sees cells [.., e + i)), so hidden blocks
// of keys are skipped; one stream of another shape is cut into one request per sequence
// (row_requests: a unified cache's prompt rows beside other slots' decode rows); several streams
// of another shape are non-causal, reading cells [0, the last any row sees].
class FlashAttnRunner {
 public:
  // threads: the CPU engine's workers (llama.cpp's thread count); parallel: the threads to run
  // them on (ggml's OpenMP team), or none for the engine's own pool.
  void set_threads(std::int32_t threads, const cpu::ParallelFor& parallel = {});
  // Computes `node` into node->data. Throws leanattn::Error for a node why_not() declines.
  void run(const ggml_tensor* node);
  // The leanattn problem the last run() computed (the tests check its variant and seq_lens).
  const DecodeProblem& problem() const { return problem_; }

 private:
  void run_stream_rows(const ggml_tensor* node);  // more than kMaxRows rows (see above)
  std::int32_t threads_ = 1;
  cpu::ParallelFor parallel_;
  std::unique_ptr<cpu::Engine> engine_;
  std::vector<float> bias_;          // [rows, heads or 1, n_kv] when the mask is a bias
  std::vector<float> slope_;         // ALiBi slopes [n_head]
  std::vector<RowSpan> spans_;       // [requests] of a node of few rows: the cells each row sees
  std::vector<std::int32_t> pages_;  // the pages each request reads, request by request
  std::vector<std::int32_t> page_start_;  // [requests + 1]: request b's are pages_[start[b]..]
  std::vector<std::int32_t> block_table_;
  DecodeProblem problem_;
};

}  // namespace leanattn::llama_cpp
