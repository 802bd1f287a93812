// A GGML_OP_FLASH_ATTN_EXT node as one leanattn decode call (see flash_attn_node.hpp).
#include "flash_attn_node.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "ggml.h"
#include "leanattn/core/float16.hpp"
#include "leanattn/error.hpp"
#include "mask_shape.hpp"

namespace leanattn::llama_cpp {

namespace {

std::string text(std::int64_t v) {
  return std::to_string(v);
}

// The leanattn dtype of a K/V type it reads; false for the others.
bool kv_dtype_of(ggml_type type, DType& out) {
  switch (type) {
    case GGML_TYPE_F16:
      out = DType::f16;
      return true;
    case GGML_TYPE_BF16:
      out = DType::bf16;
      return true;
    case GGML_TYPE_F32:
      out = DType::f32;
      return true;
    case GGML_TYPE_Q8_0:  // ggml's blocks, read in place (dtype.hpp: the same definition)
      out = DType::q8_0;
      return true;
    case GGML_TYPE_Q4_0:
      out = DType::q4_0;
      return true;
    default:
      return false;
  }
}

float op_param(const ggml_tensor* node, int i) {
  float f;
  std::memcpy(&f, &node->op_params[i], sizeof f);
  return f;
}

// Rows contiguous (the innermost stride one element, or one block for ggml's block types) and
// every other stride a multiple of the unit leanattn counts strides in (dtype_size: the element,
// a byte for the block formats, whose rows may start at any byte).
bool element_strided(const ggml_tensor* t, std::size_t unit) {
  return t->nb[0] == ggml_type_size(t->type) && t->nb[1] % unit == 0 && t->nb[2] % unit == 0 &&
         t->nb[3] % unit == 0;
}

// ALiBi's slope of head h as ggml computes it from max_bias (ggml-cpu/ops.cpp).
float alibi_slope(float max_bias, std::int64_t n_head, std::int64_t h) {
  const auto log2_heads = static_cast<std::int64_t>(1)
                          << static_cast<int>(std::floor(std::log2(n_head)));
  const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(log2_heads));
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(log2_heads));
  return h < log2_heads ? std::pow(m0, static_cast<float>(h + 1))
                        : std::pow(m1, static_cast<float>(2 * (h - log2_heads) + 1));
}

// The page size (cells) by which a node's requests can read only the pages they see: the largest
// of 256, 128, ..., 16 that divides n_kv and, with several streams, the stream stride in cells (the
// same for K and V, so one block table indexes both); 0 when none does.
std::int64_t interleave_page(const ggml_tensor* k, const ggml_tensor* v, std::int64_t n_kv,
                             std::int64_t streams) {
  if (streams > 1 && (k->nb[3] % k->nb[1] != 0 || v->nb[3] % v->nb[1] != 0 ||
                      k->nb[3] / k->nb[1] != v->nb[3] / v->nb[1])) {
    return 0;
  }
  const std::int64_t stream_cells =
      streams > 1 ? static_cast<std::int64_t>(k->nb[3] / k->nb[1]) : 0;
  for (std::int64_t page = 256; page >= 16; page /= 2) {
    if (n_kv % page == 0 && stream_cells % page == 0) return page;
  }
  return 0;
}

}  // namespace

std::string why_not(const ggml_tensor* node) {
  if (node->op != GGML_OP_FLASH_ATTN_EXT) return std::string("op: ") + ggml_op_name(node->op);
  const ggml_tensor* q = node->src[0];
  const ggml_tensor* k = node->src[1];
  const ggml_tensor* v = node->src[2];
  const ggml_tensor* mask = node->src[3];
  const ggml_tensor* sinks = node->src[4];
  DType kv{}, vt{};
  if (q->type != GGML_TYPE_F32)
    return std::string("q: f32 only (got ") + ggml_type_name(q->type) + ")";
  if (!kv_dtype_of(k->type, kv)) {
    return std::string("k: ") + ggml_type_name(k->type) +
           " caches are not read yet (f16, bf16, f32, q8_0, q4_0)";
  }
  // K and V of different types (-ctk and -ctv): the pairs validate(problem) takes.
  auto mixable = [](DType t) { return t == DType::f16 || is_block_format(t); };
  if (v->type != k->type && (!kv_dtype_of(v->type, vt) || !mixable(kv) || !mixable(vt))) {
    return std::string("v: ") + ggml_type_name(v->type) + " with k's " + ggml_type_name(k->type) +
           ": K and V of different types only among f16, q8_0, q4_0";
  }
  if (v->type == k->type) vt = kv;
  const std::int64_t d = k->ne[0], dv = v->ne[0];  // DeepSeek's MLA: 576 and 512
  if (d % kHeadDimMultiple != 0 || d > kMaxHeadDim) {
    return "head size " + text(d) + ": must be a multiple of 16 up to " + text(kMaxHeadDim);
  }
  if (dv % kHeadDimMultiple != 0 || dv < kHeadDimMultiple || dv > d) {
    return "v: head size " + text(dv) + ": must be a multiple of 16 up to k's " + text(d);
  }
  const std::int64_t rows = q->ne[1], heads = q->ne[2], streams = q->ne[3];
  if (rows > kMaxQLen) return "rows: more than " + text(kMaxQLen) + " query rows per stream";
  if (rows > kMaxRows && rows > k->ne[1]) return "rows: more query rows than cells";
  if (rows > kMaxRows && op_param(node, 1) > 0.0f) {
    return "max_bias: ALiBi on " + text(rows) + " query rows (a prompt) stays on ggml";
  }
  if (k->ne[2] < 1 || heads % k->ne[2] != 0 || v->ne[2] != k->ne[2] || v->ne[1] != k->ne[1] ||
      k->ne[3] != streams || v->ne[3] != streams || q->ne[0] != d) {
    return "shapes: q, k, v do not match";
  }
  if ((is_block_format(kv) || is_block_format(vt)) && d % kBlockValues != 0) {
    return "head size " + text(d) + ": must be a multiple of 32 for ggml's blocks";
  }
  if (is_block_format(vt) && dv % kBlockValues != 0) {
    return "v: head size " + text(dv) + ": must be a multiple of 32 for ggml's blocks";
  }
  if (!element_strided(q, sizeof(float)) || !element_strided(k, dtype_size(kv)) ||
      !element_strided(v, dtype_size(vt))) {
    return "strides: rows must be contiguous and strides whole elements";
  }
  if (streams > 1 && rows > 1 && q->nb[3] != static_cast<std::size_t>(rows) * q->nb[1]) {
    return "q: streams not a whole number of rows apart";
  }
  if (node->type != GGML_TYPE_F32 || !ggml_is_contiguous(node) || node->ne[0] != dv) {
    return "dst: f32 [Dv, ...], contiguous";
  }
  if (mask != nullptr) {
    if (mask->type != GGML_TYPE_F16 || !ggml_is_contiguous(mask)) return "mask: f16, contiguous";
    if (mask->ne[0] < k->ne[1] || mask->ne[1] < rows) return "mask: smaller than n_kv x rows";
    if (mask->ne[2] != 1 && mask->ne[2] != heads) return "mask: per-head groups of heads";
    if (mask->ne[3] != 1 && mask->ne[3] != streams) return "mask: broadcast over stream groups";
  }
  if (sinks != nullptr &&
      (sinks->type != GGML_TYPE_F32 || sinks->ne[0] != heads || !ggml_is_contiguous(sinks))) {
    return "sinks: f32 [n_head], contiguous";
  }
  const float scale = op_param(node, 0), max_bias = op_param(node, 1), cap = op_param(node, 2);
  if (!(std::isfinite(scale) && scale > 0.0f)) return "scale: must be finite and > 0";
  if (!(std::isfinite(max_bias) && max_bias >= 0.0f)) return "max_bias: must be finite, >= 0";
  if (max_bias > 0.0f && mask == nullptr) return "max_bias: ALiBi without a mask";
  if (!(std::isfinite(cap) && cap >= 0.0f)) return "logit_softcap: must be finite, >= 0";
  if (node->op_params[4] != 0) return "n_kv_max: the sparsity hint is not honoured";
  return "";
}

void FlashAttnRunner::set_threads(std::int32_t threads, const cpu::ParallelFor& parallel) {
  threads = std::max(threads, 1);
  if (threads != threads_ || parallel.run != parallel_.run ||
      parallel.context != parallel_.context) {
    engine_.reset();
  }
  threads_ = threads;
  parallel_ = parallel;
}

void FlashAttnRunner::run(const ggml_tensor* node) {
  if (const std::string why = why_not(node); !why.empty()) throw Error("node", why);
  if (node->src[0]->ne[1] > kMaxRows) {
    run_stream_rows(node);
    return;
  }
  const ggml_tensor* q = node->src[0];
  const ggml_tensor* k = node->src[1];
  const ggml_tensor* v = node->src[2];
  const ggml_tensor* mask = node->src[3];
  const ggml_tensor* sinks = node->src[4];
  const std::int64_t d = k->ne[0], dv = v->ne[0], n_kv = k->ne[1];
  const std::int64_t rows = q->ne[1], heads = q->ne[2], streams = q->ne[3];
  const std::int64_t requests = rows * streams;  // request b = stream b / rows, row b % rows
  const float max_bias = op_param(node, 1);

  // Each request reads cells [0, last visible]; the mask becomes a bias only when it hides a
  // cell inside that range or adds a non-zero value there. Where rows start further in (a
  // unified cache's slots each in their own cells, a sliding window), a window that covers every
  // row's span lets each request skip the cells before its own (mask_shape.hpp).
  DecodeProblem& p = problem_;
  p.seq_lens.assign(static_cast<std::size_t>(requests), static_cast<std::int32_t>(n_kv));
  bool bias = false;
  std::int32_t window = -1;
  const std::int64_t mask_heads = mask != nullptr ? mask->ne[2] : 1;
  if (mask != nullptr) {
    spans_.resize(static_cast<std::size_t>(requests));
    for (std::int64_t b = 0; b < requests; ++b) {
      const std::int64_t s = b / rows, r = b % rows;
      const RowSpan span = row_span(mask, s, r, n_kv);
      // A bias when some cell before the end is hidden (-inf) or not 0 (+0 and -0 are 0).
      for (std::int64_t h = 0; h < mask_heads && !bias; ++h) {
        const std::uint16_t* m = mask_row(mask, r, h, s);
        for (std::int64_t j = 0; j < span.end && !bias; ++j) bias = (m[j] & 0x7FFF) != 0;
      }
      spans_[static_cast<std::size_t>(b)] = span;
      p.seq_lens[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(span.end);
    }
    window = covering_window(spans_);
  }
  // Sequences whose cells interleave in a unified cache (llama-server's slots prefilled in the
  // same batches): each request reads only the pages of `page` cells that hold a cell it sees
  // (paged layout, a block table per request, the bias in the request's own key order), where
  // that reads at most 3/4 of the cells the requests' windows would.
  const std::int64_t page = bias ? interleave_page(k, v, n_kv, streams) : 0;
  bool by_pages = false;
  std::int64_t most_pages = 0;
  if (page > 0) {
    pages_.clear();
    page_start_.assign(1, 0);
    std::int64_t paged_cells = 0, window_cells = 0;
    for (std::int64_t b = 0; b < requests; ++b) {
      const RowSpan span = spans_[static_cast<std::size_t>(b)];
      window_cells += window < 0 ? span.end : std::min<std::int64_t>(span.end, window + 1);
      const std::int64_t n = visible_pages(mask, b / rows, b % rows, span, page, pages_);
      page_start_.push_back(static_cast<std::int32_t>(pages_.size()));
      paged_cells += n * page;
      most_pages = std::max(most_pages, n);
    }
    by_pages = 4 * paged_cells <= 3 * window_cells;
  }
  if (by_pages) {
    window = -1;
    for (std::int64_t b = 0; b < requests; ++b) {
      p.seq_lens[static_cast<std::size_t>(b)] =
          static_cast<std::int32_t>((page_start_[static_cast<std::size_t>(b) + 1] -
                                     page_start_[static_cast<std::size_t>(b)]) *
                                    page);
    }
  }
  const bool alibi = max_bias > 0.0f;
  const std::int64_t bias_heads = alibi || mask_heads > 1 ? heads : 1;
  if (bias) {
    if (alibi) {
      slope_.resize(static_cast<std::size_t>(heads));
      for (std::int64_t h = 0; h < heads; ++h) {
        slope_[static_cast<std::size_t>(h)] = alibi_slope(max_bias, heads, h);
      }
    }
    bias_.resize(static_cast<std::size_t>(requests * bias_heads * n_kv));
    for (std::int64_t b = 0; b < requests; ++b) {
      const std::int64_t len = p.seq_lens[static_cast<std::size_t>(b)];
      // The keys the request reads: its window's (from its own cell back window_left), or all.
      const std::int64_t from = window < 0 ? 0 : std::max<std::int64_t>(0, len - 1 - window);
      for (std::int64_t h = 0; h < bias_heads; ++h) {
        const std::uint16_t* m = mask_row(mask, b % rows, h, b / rows);
        const float slope = alibi ? slope_[static_cast<std::size_t>(h)] : 1.0f;
        float* out = bias_.data() + (b * bias_heads + h) * n_kv;
        if (!by_pages) {
          for (std::int64_t j = from; j < len; ++j) out[j] = slope * f16_bits_to_float(m[j]);
          continue;
        }
        // Key i x page + j of the request is cell pages_[i] x page + j of its stream.
        for (std::int32_t i = page_start_[static_cast<std::size_t>(b)];
             i < page_start_[static_cast<std::size_t>(b) + 1]; ++i) {
          const std::uint16_t* cells = m + static_cast<std::int64_t>(pages_[i]) * page;
          for (std::int64_t j = 0; j < page; ++j) *out++ = slope * f16_bits_to_float(cells[j]);
        }
      }
    }
  }

  DType kv{}, vt{};
  kv_dtype_of(k->type, kv);
  kv_dtype_of(v->type, vt);
  p.q_heads = static_cast<std::int32_t>(heads);
  p.kv_heads = static_cast<std::int32_t>(k->ne[2]);
  p.head_dim = static_cast<std::int32_t>(d);
  p.head_dim_v = static_cast<std::int32_t>(dv);
  p.q_len = 1;
  p.query_start_loc.clear();  // a prompt node before may have set it (run_stream_rows)
  p.q_dtype = DType::f32;
  p.kv_dtype = kv;
  p.v_dtype = vt == kv ? std::nullopt : std::optional<DType>(vt);
  p.scale = op_param(node, 0);
  p.variant = AttentionVariant{};
  p.variant.window_left = bias ? window : -1;  // rows start after cell 0 only where it hides one
  p.variant.softcap = op_param(node, 2);
  p.variant.sinks = sinks != nullptr;
  p.variant.bias = bias;
  p.bias_dtype = DType::f32;
  // One stream, or one row per stream: request b's cells are b x (stream stride) on. Several
  // rows in each of several streams: one page per stream, the same page for its rows. By pages
  // (above): request b's own pages, numbered across streams.
  const bool stream_pages = streams > 1 && rows > 1 && !by_pages;
  block_table_.clear();
  if (by_pages) {
    const std::int64_t per_stream =
        streams > 1 ? static_cast<std::int64_t>(k->nb[3] / k->nb[1]) / page : 0;
    p.layout = KvLayout::paged;
    p.page_size = static_cast<std::int32_t>(page);
    p.num_pages = (streams - 1) * per_stream + n_kv / page;
    p.max_pages = static_cast<std::int32_t>(std::max<std::int64_t>(most_pages, 1));
    p.capacity = 0;
    block_table_.assign(static_cast<std::size_t>(requests * p.max_pages), 0);
    for (std::int64_t b = 0; b < requests; ++b) {
      const std::int32_t first = page_start_[static_cast<std::size_t>(b)];
      for (std::int32_t i = first; i < page_start_[static_cast<std::size_t>(b) + 1]; ++i) {
        block_table_[static_cast<std::size_t>(b * p.max_pages + (i - first))] =
            static_cast<std::int32_t>((b / rows) * per_stream +
                                      pages_[static_cast<std::size_t>(i)]);
      }
    }
  } else if (stream_pages) {
    p.layout = KvLayout::paged;
    p.page_size = static_cast<std::int32_t>(n_kv);
    p.num_pages = streams;
    p.max_pages = 1;
    p.capacity = 0;
    block_table_.resize(static_cast<std::size_t>(requests));
    for (std::int64_t b = 0; b < requests; ++b) {
      block_table_[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(b / rows);
    }
  } else {
    p.layout = KvLayout::contiguous;
    p.capacity = n_kv;
    p.page_size = 0;  // a paged node before may have set them
    p.num_pages = 0;
    p.max_pages = 0;
  }
  auto kv_strides = [&](const ggml_tensor* t, DType type) {
    const std::size_t es = dtype_size(type);  // bytes for the block formats
    const auto stream = static_cast<std::int64_t>(t->nb[3] / es);
    const std::int64_t first = by_pages       ? static_cast<std::int64_t>(page * t->nb[1] / es)
                               : streams == 1 ? 0
                                              : stream;
    return KvStrides{first, static_cast<std::int64_t>(t->nb[1] / es),
                     static_cast<std::int64_t>(t->nb[2] / es)};
  };

  DecodeTensors t;
  t.q = q->data;
  // Request b = stream b / rows, row b % rows: rows apart within a stream, and streams a whole
  // number of rows apart (why_not), or one row per stream: streams apart.
  t.q_stride_batch = static_cast<std::int64_t>((rows == 1 ? q->nb[3] : q->nb[1]) / sizeof(float));
  t.q_stride_head = static_cast<std::int64_t>(q->nb[2] / sizeof(float));
  t.q_stride_token = t.q_stride_batch;
  t.k_cache = k->data;
  t.v_cache = v->data;
  t.k_strides = kv_strides(k, kv);
  t.v_strides = kv_strides(v, vt);
  if (!block_table_.empty()) {
    t.block_table = block_table_.data();
    t.block_table_stride = by_pages ? p.max_pages : 1;
  }
  t.out = node->data;
  t.out_stride_batch = dv * heads;  // dst [Dv, n_head, rows, streams]: request b is row b
  t.out_stride_head = dv;
  t.out_stride_token = dv * heads;
  t.sinks = sinks != nullptr ? static_cast<const float*>(sinks->data) : nullptr;
  if (bias) {
    t.bias = bias_.data();
    t.bias_stride_batch = bias_heads * n_kv;
    t.bias_stride_head = bias_heads > 1 ? n_kv : 0;
    t.bias_stride_token = 0;
  }
  if (!engine_) {
    engine_ = std::make_unique<cpu::Engine>(
        cpu::EngineOptions{.workers = threads_, .parallel = parallel_});
  }
  engine_->run(p, engine_->plan(p), t);
}

void FlashAttnRunner::run_stream_rows(const ggml_tensor* node) {
  const ggml_tensor* q = node->src[0];
  const ggml_tensor* k = node->src[1];
  const ggml_tensor* v = node->src[2];
  const ggml_tensor* mask = node->src[3];
  const ggml_tensor* sinks = node->src[4];
  const std::int64_t d = k->ne[0], dv = v->ne[0], n_kv = k->ne[1];
  const std::int64_t rows = q->ne[1], heads = q->ne[2], streams = q->ne[3];
  DecodeProblem& p = problem_;
  p = DecodeProblem{};
  // A causal-shaped mask (mask_shape.hpp): stream s is a causal request (windowed where the mask
  // is) of the seq_len its last row sees, so the blocks of keys a block of rows does not see are
  // skipped; the mask stays the bias (what it adds to the cells it shows). One stream of another
  // shape (a unified cache: one slot's prompt rows beside other slots' decode rows) is cut into
  // one request per sequence (row_requests), each reading its own cells. Otherwise stream s
  // reads cells [0, the last some row of it sees on some head), non-causal: at least its rows
  // (their own cells), which the bias hides where the mask does.
  CausalShape causal;
  const bool is_causal = mask != nullptr && causal_shape(mask, rows, streams, n_kv, causal);
  std::optional<RowRequests> split;
  if (!is_causal && mask != nullptr && streams == 1) {
    split = row_requests(mask, rows, n_kv);
    // Rows of one sequence cut apart (a mask no cut recognises) would each read K and V again:
    // past 64 requests and a quarter of the rows, one non-causal request reads them once.
    if (split->seq_lens.size() > std::max<std::size_t>(64, static_cast<std::size_t>(rows) / 4)) {
      split.reset();
    }
  }
  if (is_causal) {
    p.seq_lens = causal.seq_lens;
  } else if (split) {
    p.seq_lens = split->seq_lens;
    p.query_start_loc = split->query_start_loc;
  } else {
    p.seq_lens.assign(static_cast<std::size_t>(streams), static_cast<std::int32_t>(n_kv));
    for (std::int64_t s = 0; mask != nullptr && s < streams; ++s) {
      const std::int64_t last = visible_end(mask, s, 0, rows, n_kv);
      p.seq_lens[static_cast<std::size_t>(s)] =
          static_cast<std::int32_t>(last == 0 ? 0 : std::max(last, rows));
    }
  }
  DType kv{}, vt{};
  kv_dtype_of(k->type, kv);
  kv_dtype_of(v->type, vt);
  p.q_heads = static_cast<std::int32_t>(heads);
  p.kv_heads = static_cast<std::int32_t>(k->ne[2]);
  p.head_dim = static_cast<std::int32_t>(d);
  p.head_dim_v = static_cast<std::int32_t>(dv);
  p.q_len = static_cast<std::int32_t>(rows);
  // One stream: its rows as the request's query tokens (query_start_loc), so that lean cuts it by
  // each tile's cost (heuristics.hpp, tile_cost: the hidden part of a causal prompt's last tiles
  // free) and not by tiles, which left one worker with 2.6x the other's work at depth 0. Several
  // streams keep q_len: a mask shared by the streams is not laid out as one row per query token.
  if (streams == 1 && !split) p.query_start_loc = {0, static_cast<std::int32_t>(rows)};
  p.q_dtype = DType::f32;
  p.kv_dtype = kv;
  p.v_dtype = vt == kv ? std::nullopt : std::optional<DType>(vt);
  p.scale = op_param(node, 0);
  p.variant = AttentionVariant{.causal = is_causal || (split && split->causal),
                               .window_left = is_causal ? causal.window_left
                                              : split   ? split->window_left
                                                        : -1,
                               .softcap = op_param(node, 2),
                               .sinks = sinks != nullptr,
                               .bias = mask != nullptr};
  p.bias_dtype = DType::f16;
  p.layout = KvLayout::contiguous;
  p.capacity = n_kv;

  const std::size_t ks = dtype_size(kv), vs = dtype_size(vt);
  DecodeTensors t;
  t.q = q->data;  // [d, rows, heads, streams]: request s, query token r
  t.q_stride_batch = static_cast<std::int64_t>(q->nb[3] / sizeof(float));
  t.q_stride_token = static_cast<std::int64_t>(q->nb[1] / sizeof(float));
  t.q_stride_head = static_cast<std::int64_t>(q->nb[2] / sizeof(float));
  t.k_cache = k->data;
  t.v_cache = v->data;
  // Request s reads stream s; the requests of one stream's rows (split) all read its cells.
  const std::int64_t k_stream = split ? 0 : static_cast<std::int64_t>(k->nb[3] / ks);
  const std::int64_t v_stream = split ? 0 : static_cast<std::int64_t>(v->nb[3] / vs);
  t.k_strides = {k_stream, static_cast<std::int64_t>(k->nb[1] / ks),
                 static_cast<std::int64_t>(k->nb[2] / ks)};
  t.v_strides = {v_stream, static_cast<std::int64_t>(v->nb[1] / vs),
                 static_cast<std::int64_t>(v->nb[2] / vs)};
  t.out = node->data;  // dst [Dv, n_head, rows, streams]
  t.out_stride_head = dv;
  t.out_stride_token = dv * heads;
  t.out_stride_batch = dv * heads * rows;
  t.sinks = sinks != nullptr ? static_cast<const float*>(sinks->data) : nullptr;
  if (mask != nullptr) {  // the f16 mask in place: row r of stream s, head h (or shared)
    t.bias = mask->data;
    t.bias_stride_batch = mask->ne[3] > 1 ? static_cast<std::int64_t>(mask->nb[3] / 2) : 0;
    t.bias_stride_token = static_cast<std::int64_t>(mask->nb[1] / 2);
    t.bias_stride_head = mask->ne[2] > 1 ? static_cast<std::int64_t>(mask->nb[2] / 2) : 0;
  }
  if (!engine_) {
    engine_ = std::make_unique<cpu::Engine>(
        cpu::EngineOptions{.workers = threads_, .parallel = parallel_});
  }
  engine_->run(p, engine_->plan(p), t);
}

}  // namespace leanattn::llama_cpp
