// The flags that describe a decode problem, shared by `plan`, `bench` and (for overrides)
// `check`, and the mapping from leanattn::Error argument names to the flags a user typed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "leanattn/planner.hpp"
#include "leanattn/problem.hpp"

namespace leanattn::cli {

struct ProblemArgs {
  std::int32_t batch = 1;
  std::int32_t q_heads = 0;  // 0: same as kv_heads
  std::int32_t kv_heads = 1;
  std::int32_t head_dim = 128;
  std::int32_t head_dim_v = 0;  // V's width; 0: head_dim
  bool shared_kv = false;       // V is the start of K's rows (no V cache)
  bool mla = false;  // absorbed MLA: K 576 / V 512 in one latent cache, 1 KV head, 128 q heads
  std::int64_t seq_len = 4096;  // uniform length (when seq_lens is empty)
  std::string seq_lens;         // ragged lengths, comma-separated (excludes batch and seq_len)
  std::string dtype = "f16";    // Q and out, and K and V unless kv_dtype is set; an 8-bit type
                                //   here means K and V in it with f16 Q and out
  std::string kv_dtype;         // K and V ("" = from dtype)
  std::string v_dtype;          // V where it differs from K ("" = kv_dtype's)
  std::string kv_scales;        // 8-bit caches: scale granularity ("" = the dtype's default)
  std::int32_t page_size = 0;   // 0: contiguous
  std::int32_t q_len = 1;       // query tokens per request
  std::string query_lens;       // a mixed batch: query tokens of each request, comma-separated
                                //   (query_start_loc's differences; excludes q_len)
  bool non_causal = false;
  std::int32_t window = -1;  // window_left; -1: none
  float softcap = 0.0f;
  bool sinks = false;        // random sink logits per query head
  bool alibi = false;        // ALiBi slopes per query head
  std::int32_t workers = 0;  // 0: the executor's default (one per core)
  std::int32_t tile = 0;     // 0: default for head_dim
  std::int32_t splits = 0;
  bool batch_invariant = false;
  std::int32_t chunk_tiles = 0;
  std::string order = "automatic";

  void add_shape_flags(CLI::App& app);
  void add_plan_flags(CLI::App& app);
  // Builds and validates the problem (throws Error with the CLI flag names). With --mla, the
  // shape flags it sets must not be given too (CLI11 refuses the pairs).
  DecodeProblem problem() const;
  bool v_in_k() const { return shared_kv || mla; }  // V read from K's rows
  PlanOptions plan_options(Strategy strategy) const;
};

// "5,0,17" -> {5, 0, 17}. Throws Error(argument) unless every comma-separated entry is a whole
// number ("5,,6", "5,x" and "" are refused).
std::vector<std::int64_t> parse_lengths(const std::string& text, const char* argument = "seq_lens");

// "seq_lens" -> "--seq-lens"; names that are not flags are returned unchanged.
std::string flag_name(const std::string& argument);

// Runs `body`, turning leanattn::Error into "leanattn <command>: error: --flag: rule" on stderr
// and exit code 2. Other exceptions give exit code 1.
int run_guarded(const char* command, const std::function<int()>& body);

}  // namespace leanattn::cli
