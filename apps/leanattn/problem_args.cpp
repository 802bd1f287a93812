// Problem flags and error reporting for the CLI subcommands.
#include "problem_args.hpp"

#include <fmt/core.h>

#include <charconv>
#include <limits>
#include <map>

#include "leanattn/error.hpp"

namespace leanattn::cli {

void ProblemArgs::add_shape_flags(CLI::App& app) {
  CLI::Option* batch_flag =
      app.add_option("--batch", batch, "requests in the batch, each of --seq-len tokens");
  app.add_option("--q-heads", q_heads, "query heads (default: --kv-heads; --mla: 128)");
  CLI::Option* kv_heads_flag = app.add_option("--kv-heads", kv_heads, "key/value heads");
  CLI::Option* head_dim_flag = app.add_option(
      "--head-dim", head_dim, "head dimension of Q and K (multiple of 16, up to 576)");
  CLI::Option* head_dim_v_flag =
      app.add_option("--head-dim-v", head_dim_v,
                     "head dimension of V and the output where narrower than K's (multiple of "
                     "16; DeepSeek: --head-dim 192 --head-dim-v 128); 0 = --head-dim");
  CLI::Option* shared_flag = app.add_flag(
      "--shared-kv", shared_kv,
      "no V cache: V is the first --head-dim-v values of K's rows (absorbed MLA's latent cache)");
  app.add_flag("--mla", mla,
               "DeepSeek's absorbed MLA decode: one latent cache of 576-wide rows (K) whose "
               "first 512 values are V, one KV head, --q-heads query heads (default 128)")
      ->excludes(kv_heads_flag)
      ->excludes(head_dim_flag)
      ->excludes(head_dim_v_flag)
      ->excludes(shared_flag);
  CLI::Option* seq_len_flag =
      app.add_option("--seq-len", seq_len, "tokens per request (uniform batch)");
  app.add_option("--seq-lens", seq_lens,
                 "comma-separated tokens per request, e.g. 5000,0,17 (ragged batch; instead of "
                 "--batch and --seq-len)")
      ->excludes(batch_flag)
      ->excludes(seq_len_flag);
  app.add_option("--dtype", dtype,
                 "element type of Q, K, V: f32, f16, bf16; or fp8_e4m3, fp8_e5m2, int8, or "
                 "ggml's block formats q8_0, q4_0 for a quantized K/V cache with f16 Q and "
                 "output");
  app.add_option("--kv-dtype", kv_dtype,
                 "element type of K and V if not --dtype's: f32, f16, bf16, fp8_e4m3, fp8_e5m2, "
                 "int8, q8_0, q4_0");
  app.add_option("--v-dtype", v_dtype,
                 "element type of V where it differs from K's (llama.cpp's -ctv): with K and V "
                 "both f16, q8_0 or q4_0");
  app.add_option("--kv-scales", kv_scales,
                 "8-bit K/V: per_tensor, per_kv_head or per_token_head scales (default: per "
                 "tensor for fp8, per token and head for int8)");
  app.add_option("--page-size", page_size, "tokens per KV page; 0 = contiguous cache");
  CLI::Option* q_len_flag =
      app.add_option("--q-len", q_len, "query tokens per request (speculative decoding, MTP)");
  app.add_option("--query-lens", query_lens,
                 "a mixed batch: comma-separated query tokens per request, e.g. 512,1,1,0 (a "
                 "prefill chunk beside decode rows; the last that many of each request's "
                 "tokens; instead of --q-len)")
      ->excludes(q_len_flag);
  app.add_flag("--non-causal", non_causal, "q-len > 1: every query sees every key");
  app.add_option("--window", window, "sliding window: keys within this many before the query");
  app.add_option("--softcap", softcap, "logits soft-cap (Gemma 2); 0 = off");
  app.add_flag("--sinks", sinks, "a sink logit per query head (gpt-oss), drawn at random");
  app.add_flag("--alibi", alibi, "ALiBi slopes per query head (2^(-8 (h+1) / q_heads))");
}

void ProblemArgs::add_plan_flags(CLI::App& app) {
  app.add_option("--workers", workers, "persistent workers (threads); 0 = one per core");
  app.add_option("--tile", tile, "lean-tile size in tokens; 0 = default for the head dim");
  app.add_option("--splits", splits,
                 "split strategy: splits per pair; 0 = the executor's rule (heuristics.hpp)");
  app.add_flag("--batch-invariant", batch_invariant,
               "lean strategy: fixed chunks per request (bitwise batch invariance)");
  app.add_option("--chunk-tiles", chunk_tiles, "batch-invariant chunk size in tiles; 0 = default");
  app.add_option("--order", order,
                 "tile order: automatic (the executor's), head_major (the paper's; head and split "
                 "deal pairs to the first free worker), token_major (whole token rows; head and "
                 "split deal pairs contiguously)");
}

DecodeProblem ProblemArgs::problem() const {
  DecodeProblem p;
  p.kv_heads = mla ? 1 : kv_heads;
  p.q_heads = q_heads != 0 ? q_heads : mla ? 128 : kv_heads;
  p.head_dim = mla ? 576 : head_dim;
  p.head_dim_v = mla ? 512 : head_dim_v;
  const DType main = parse_dtype(dtype, "dtype");
  p.q_dtype = is_kv_only(main) ? DType::f16 : main;
  p.kv_dtype = kv_dtype.empty() ? main : parse_dtype(kv_dtype, "kv_dtype");
  if (!v_dtype.empty()) p.v_dtype = parse_dtype(v_dtype, "v_dtype");
  p.kv_scales =
      kv_scales.empty() ? default_kv_scales(p.kv_dtype) : parse_kv_scales(kv_scales, "kv_scales");
  p.q_len = q_len;
  if (!query_lens.empty()) {  // query_start_loc from the counts; q_len their bound
    p.query_start_loc.assign(1, 0);
    std::int64_t most = 1;
    for (std::int64_t n : parse_lengths(query_lens, "query_lens")) {
      require(n >= 0 && n <= kMaxQLen, "query_lens", [&] {
        return "must be in [0, " + std::to_string(kMaxQLen) + "] query tokens per request (got " +
               std::to_string(n) + ")";
      });
      most = std::max(most, n);
      p.query_start_loc.push_back(p.query_start_loc.back() + static_cast<std::int32_t>(n));
    }
    p.q_len = static_cast<std::int32_t>(most);
  }
  p.variant = {.causal = !non_causal,
               .window_left = window,
               .softcap = softcap,
               .sinks = sinks,
               .alibi = alibi};
  auto to_len = [](std::int64_t v, const char* argument) {
    require(v >= 0 && v <= std::numeric_limits<std::int32_t>::max(), argument,
            [&] { return "must be in [0, 2^31) tokens (got " + std::to_string(v) + ")"; });
    return static_cast<std::int32_t>(v);
  };
  if (!seq_lens.empty()) {
    for (std::int64_t v : parse_lengths(seq_lens)) p.seq_lens.push_back(to_len(v, "seq_lens"));
  } else {
    require(batch >= 1 && batch <= kMaxBatch, "batch", [&] {
      return "must be in [1, " + std::to_string(kMaxBatch) + "] (got " + std::to_string(batch) +
             ")";
    });
    require(seq_len >= 0, "seq_len",
            [&] { return "must be >= 0 (got " + std::to_string(seq_len) + ")"; });
    p.seq_lens.assign(static_cast<std::size_t>(batch), to_len(seq_len, "seq_len"));
  }
  std::int32_t longest = 0;
  std::int64_t pages = 0;
  for (std::int32_t len : p.seq_lens) longest = std::max(longest, len);
  require(page_size >= 0, "page_size",
          [&] { return "must be >= 0 (0 = contiguous) (got " + std::to_string(page_size) + ")"; });
  if (page_size == 0) {
    p.layout = KvLayout::contiguous;
    p.capacity = longest;
  } else {
    p.layout = KvLayout::paged;
    p.page_size = page_size;
    for (std::int32_t len : p.seq_lens) pages += pages_for(len, page_size);
    p.max_pages = std::max(1, static_cast<std::int32_t>(pages_for(longest, page_size)));
    p.num_pages = std::max<std::int64_t>(1, pages);
  }
  validate(p);
  require(!v_in_k() || p.value_dtype() == p.kv_dtype, "shared_kv", [&] {
    return "needs V of K's type (V is the start of K's rows) (got K " +
           std::string(dtype_name(p.kv_dtype)) + ", V " + std::string(dtype_name(p.value_dtype())) +
           ")";
  });
  return p;
}

PlanOptions ProblemArgs::plan_options(Strategy strategy) const {
  PlanOptions o;
  o.strategy = strategy;
  o.tile_tokens = tile;
  o.splits = strategy == Strategy::split ? splits : 0;
  o.batch_invariant = strategy == Strategy::lean && batch_invariant;
  o.chunk_tiles = chunk_tiles;
  o.order = parse_line_order(order, "order");
  return o;
}

std::vector<std::int64_t> parse_lengths(const std::string& text, const char* argument) {
  std::vector<std::int64_t> lengths;
  std::size_t begin = 0;
  for (std::size_t entry = 1;; ++entry) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const char* first = text.data() + begin;
    const char* last = text.data() + end;
    std::int64_t value = 0;
    const auto [stop, error] = std::from_chars(first, last, value);
    require(first != last && error == std::errc() && stop == last, argument, [&] {
      const std::string item(first, last);
      return "must be comma-separated whole numbers of tokens (entry " + std::to_string(entry) +
             " of '" + text + "' is " + (item.empty() ? "empty" : "'" + item + "'") + ")";
    });
    lengths.push_back(value);
    if (end == text.size()) return lengths;
    begin = end + 1;
  }
}

std::string flag_name(const std::string& argument) {
  static const std::map<std::string, std::string> kFlags = {
      {"batch", "--batch"},
      {"q_heads", "--q-heads"},
      {"kv_heads", "--kv-heads"},
      {"head_dim", "--head-dim"},
      {"head_dim_v", "--head-dim-v"},
      {"shared_kv", "--shared-kv"},
      {"seq_len", "--seq-len"},
      {"seq_lens", "--seq-lens"},
      {"dtype", "--dtype"},
      {"q_dtype", "--dtype"},
      {"kv_dtype", "--kv-dtype"},
      {"v_dtype", "--v-dtype"},
      {"kv_scales", "--kv-scales"},
      {"page_size", "--page-size"},
      {"q_len", "--q-len"},
      {"query_lens", "--query-lens"},
      {"query_start_loc", "--query-lens"},
      {"window_left", "--window"},
      {"softcap", "--softcap"},
      {"sinks", "--sinks"},
      {"alibi_slopes", "--alibi"},
      {"workers", "--workers"},
      {"tile", "--tile"},
      {"splits", "--splits"},
      {"strategy", "--strategy"},
      {"chunk_tiles", "--chunk-tiles"},
      {"batch_invariant", "--batch-invariant"},
      {"repeat", "--repeat"},
      {"count", "--count"},
      {"backend", "--backend"},
      {"order", "--order"},
      {"max_len", "--max-len"},
      {"cache_kib", "--cache-kib"},
      {"simd", "--simd"}};
  const auto it = kFlags.find(argument);
  return it == kFlags.end() ? argument : it->second;
}

int run_guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    fmt::print(stderr, "leanattn {}: error: {}: {}\n", command, flag_name(e.argument()), e.rule());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "leanattn {}: error: {}\n", command, e.what());
    return 1;
  }
}

}  // namespace leanattn::cli
