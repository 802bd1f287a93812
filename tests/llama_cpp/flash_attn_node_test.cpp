// The llama.cpp backend's node translation (integrations/llama.cpp/flash_attn_node.cpp) against an
// fp64 oracle of GGML_OP_FLASH_ATTN_EXT written from ggml's definition (ggml-cpu/ops.cpp): nodes
// built with ggml's own API the way llama.cpp builds them (K and V as permuted views of a larger
// cache, several streams, padded masks), masks with holes (several sequences interleaved in one
// unified cache, sliding windows, empty rows, test-backend-ops' random additive masks), ALiBi from
// max_bias, soft-cap, sinks, 1 to 8 query rows and prompt micro-batches of 9 to 300, odd GQA
// ratios, f16 / bf16 / f32 caches, q8_0 and q4_0 caches quantized by ggml's own quantizer and
// decoded for the oracle by ggml's own to_float, and several thread counts. The output is poisoned
// (NaN) first. Then every decline, by reason.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "flash_attn_node.hpp"
#include "ggml.h"

namespace leanattn::llama_cpp {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

// causal: prefix's cells showing random values; causal_extra and causal_hole one cell off it (row
// rows / 2 sees the next row's cell too; row rows / 2 has cell 3 hidden).
enum class MaskKind {
  none,
  prefix,
  sequences,
  window,
  alibi,
  random,
  causal,
  causal_extra,
  causal_hole,
  slots,
  slot_runs
};

struct NodeSpec {
  std::int64_t d = 64, heads = 8, kv_heads = 2, rows = 1, streams = 1, n_kv = 300;
  std::int64_t dv = 0;       // V's head size where narrower than K's (DeepSeek's MLA: 512 of 576)
  bool v_in_k = false;       // V a view of K's cache, its first dv values (llama.cpp's MLA graph)
  std::int64_t kv_size = 0;  // the cache's cells (>= n_kv; 0: n_kv + 37)
  ggml_type kv = GGML_TYPE_F16;
  ggml_type v = GGML_TYPE_COUNT;  // V's type where it differs from K's (-ctv); COUNT: kv
  MaskKind mask = MaskKind::prefix;
  std::int64_t mask_heads = 1;
  float max_bias = 0.0f, softcap = 0.0f;
  bool sinks = false;
};

// A FLASH_ATTN_EXT node and the context holding its data.
struct Node {
  ggml_context* ctx = nullptr;
  ggml_tensor* node = nullptr;
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() {
    if (ctx != nullptr) ggml_free(ctx);
  }
};

void set_value(ggml_tensor* t, std::size_t offset, float x) {
  char* p = static_cast<char*>(t->data) + offset;
  switch (t->type) {
    case GGML_TYPE_F16:
      *reinterpret_cast<ggml_fp16_t*>(p) = ggml_fp32_to_fp16(x);
      break;
    case GGML_TYPE_BF16:
      *reinterpret_cast<ggml_bf16_t*>(p) = ggml_fp32_to_bf16(x);
      break;
    default:
      *reinterpret_cast<float*>(p) = x;
  }
}

double value(const ggml_tensor* t, std::size_t offset) {
  const char* p = static_cast<const char*>(t->data) + offset;
  switch (t->type) {
    case GGML_TYPE_F16:
      return ggml_fp16_to_fp32(*reinterpret_cast<const ggml_fp16_t*>(p));
    case GGML_TYPE_BF16:
      return ggml_bf16_to_fp32(*reinterpret_cast<const ggml_bf16_t*>(p));
    default:
      return *reinterpret_cast<const float*>(p);
  }
}

// Value i of the K or V row at byte `row` of t: an element, or (a block type) decoded by ggml's
// own to_float from the block that holds it.
double kv_value(const ggml_tensor* t, std::int64_t i, std::size_t row) {
  if (!ggml_is_quantized(t->type)) return value(t, row + static_cast<std::size_t>(i) * t->nb[0]);
  const std::int64_t per_block = ggml_blck_size(t->type);
  std::vector<float> block(static_cast<std::size_t>(per_block));
  const char* at = static_cast<const char*>(t->data) + row +
                   static_cast<std::size_t>(i / per_block) * ggml_type_size(t->type);
  ggml_get_type_traits(t->type)->to_float(at, block.data(), per_block);
  return block[static_cast<std::size_t>(i % per_block)];
}

// Fills a contiguous tensor with N(0, 1) values; a block type's rows are quantized by ggml's own
// quantizer (ggml_quantize_chunk), as llama.cpp's cache writes them.
void fill_normal(ggml_tensor* t, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  const std::int64_t n = ggml_nelements(t);
  if (ggml_is_quantized(t->type)) {
    std::vector<float> values(static_cast<std::size_t>(n));
    for (float& x : values) x = normal(rng);
    ggml_quantize_chunk(t->type, values.data(), t->data, 0, n / t->ne[0], t->ne[0], nullptr);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    set_value(t, static_cast<std::size_t>(i) * ggml_type_size(t->type), normal(rng));
  }
}

// The mask row of stream s, query row r, head group g: what each cell adds (-inf hides it).
std::vector<float> mask_row(const NodeSpec& s, std::int64_t stream, std::int64_t r, std::int64_t g,
                            std::mt19937& rng) {
  std::vector<float> m(static_cast<std::size_t>(s.n_kv), -kInf);
  // Filled cells: stream-dependent, the rest of the view is padding. The query rows are the
  // last `rows` filled cells (their own positions).
  const std::int64_t filled = s.n_kv - 5 - 17 * stream;
  const std::int64_t pos = filled - s.rows + r;
  switch (s.mask) {
    case MaskKind::none:
      break;
    case MaskKind::prefix:
      for (std::int64_t j = 0; j <= pos; ++j) m[static_cast<std::size_t>(j)] = 0.0f;
      break;
    case MaskKind::window:
      for (std::int64_t j = std::max<std::int64_t>(0, pos - 40); j <= pos; ++j) {
        m[static_cast<std::size_t>(j)] = 0.0f;
      }
      break;
    case MaskKind::alibi:
      for (std::int64_t j = 0; j <= pos; ++j) {
        m[static_cast<std::size_t>(j)] = -static_cast<float>(pos - j);
      }
      break;
    case MaskKind::causal:
    case MaskKind::causal_extra:
    case MaskKind::causal_hole: {
      std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
      for (std::int64_t j = 0; j <= pos; ++j) m[static_cast<std::size_t>(j)] = uniform(rng);
      if (r == s.rows / 2 && s.mask == MaskKind::causal_extra) {
        m[static_cast<std::size_t>(pos + 1)] = uniform(rng);
      }
      if (r == s.rows / 2 && s.mask == MaskKind::causal_hole) m[3] = -kInf;
      break;
    }
    case MaskKind::sequences: {
      // Three sequences interleaved cell by cell (llama-server's slots decoding together); row r
      // belongs to sequence r % 3 and sees that sequence's cells up to its own; sequence 2 of
      // stream 1 has no cell (an empty row).
      const std::int64_t seq = r % 3;
      if (stream == 1 && seq == 2) break;
      for (std::int64_t j = seq; j <= pos; j += 3) m[static_cast<std::size_t>(j)] = 0.0f;
      break;
    }
    case MaskKind::slots: {
      // A unified cache (llama-server -kvu): rows 0..2 decode slots 0..2, each in its own block of
      // cells at its own depth; the later rows are slot 3's prompt, in its block after theirs,
      // causal, with one cell of another sequence inside it. Visible cells add random values.
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      const std::int64_t z = (s.n_kv - s.rows) / 4, decoding = std::min<std::int64_t>(s.rows, 3);
      const std::int64_t begin = r < decoding ? r * z : 3 * z;
      const std::int64_t end =
          r < decoding ? r * z + z / 2 + 7 * r : 3 * z + z / 3 + r - decoding + 1;
      for (std::int64_t j = begin; j < end; ++j) m[static_cast<std::size_t>(j)] = uniform(rng);
      if (r >= decoding) m[static_cast<std::size_t>(3 * z + 2)] = -kInf;
      break;
    }
    case MaskKind::slot_runs: {
      // A unified cache whose three slots were prefilled together: their cells interleave in
      // runs of 64 (from cell 8, round robin), row r decodes slot r % 3 and sees its runs up to
      // a depth of its own. Visible cells add random values.
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      const std::int64_t slot = r % 3, limit = s.n_kv - 9 - 13 * r - 5 * stream;
      for (std::int64_t j = 8; j < limit; ++j) {
        if ((j - 8) % 192 / 64 == slot) m[static_cast<std::size_t>(j)] = uniform(rng);
      }
      break;
    }
    case MaskKind::random: {
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      for (float& x : m) x = uniform(rng);
      for (int run = 0; run < 4; ++run) {  // runs of -inf and of 0
        const std::int64_t at = static_cast<std::int64_t>(rng() % s.n_kv);
        const float fill = run % 2 == 0 ? -kInf : 0.0f;
        for (std::int64_t j = at; j < std::min(s.n_kv, at + 30); ++j) {
          m[static_cast<std::size_t>(j)] = fill;
        }
      }
      if (g == 1) m.assign(m.size(), -kInf);  // a whole head group hidden
      break;
    }
  }
  return m;
}

// Builds the node as llama.cpp's graph does: q from a [d, heads, rows, streams] tensor, K and V
// as views of a [d * kv_heads, kv_size, streams] cache (V: dv wide, or the first dv values of K's
// rows with v_in_k), the mask padded to a multiple of 8 rows.
void build(Node& out, const NodeSpec& s, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const std::int64_t mask_rows = (std::max<std::int64_t>(s.rows, 8) + 7) / 8 * 8;
  const std::int64_t kv_size = s.kv_size > 0 ? s.kv_size : s.n_kv + 37;
  const ggml_type types[2] = {s.kv, s.v == GGML_TYPE_COUNT ? s.kv : s.v};  // K, V
  const std::size_t es = std::max(ggml_type_size(types[0]), ggml_type_size(types[1]));
  const std::size_t bytes = static_cast<std::size_t>(
      (s.d * s.heads * s.rows * s.streams * 2 + s.heads) * 4 +
      2 * s.d * s.kv_heads * kv_size * s.streams * static_cast<std::int64_t>(es) +
      s.n_kv * mask_rows * s.mask_heads * s.streams * 2 + (1 << 20));
  out.ctx = ggml_init({bytes, nullptr, false});
  ggml_context* ctx = out.ctx;
  ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, s.d, s.heads, s.rows, s.streams);
  fill_normal(q, rng);
  ggml_tensor* caches[2];
  ggml_tensor* views[2];
  const std::int64_t widths[2] = {s.d, s.dv > 0 ? s.dv : s.d};
  for (int i = 0; i < 2; ++i) {
    const std::int64_t w = widths[i];
    if (i == 0 || !s.v_in_k) {
      caches[i] = ggml_new_tensor_3d(ctx, types[i], w * s.kv_heads, kv_size, s.streams);
      fill_normal(caches[i], rng);
    } else {
      caches[i] = caches[0];
    }
    const std::size_t head_bytes = ggml_row_size(types[i], i == 1 && s.v_in_k ? s.d : w);
    ggml_tensor* v4 = ggml_view_4d(ctx, caches[i], w, s.kv_heads, s.n_kv, s.streams, head_bytes,
                                   caches[i]->nb[1], caches[i]->nb[2], 0);
    views[i] = ggml_permute(ctx, v4, 0, 2, 1, 3);  // [w, n_kv, kv_heads, streams]
  }
  ggml_tensor* mask = nullptr;
  if (s.mask != MaskKind::none) {
    mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, s.n_kv, mask_rows, s.mask_heads, s.streams);
    for (std::int64_t st = 0; st < s.streams; ++st) {
      for (std::int64_t g = 0; g < s.mask_heads; ++g) {
        for (std::int64_t r = 0; r < mask_rows; ++r) {  // rows past `rows`: padding, never read
          const std::vector<float> m = mask_row(s, st, std::min(r, s.rows - 1), g, rng);
          for (std::int64_t j = 0; j < s.n_kv; ++j) {
            set_value(mask, j * mask->nb[0] + r * mask->nb[1] + g * mask->nb[2] + st * mask->nb[3],
                      r < s.rows ? m[static_cast<std::size_t>(j)] : 7.0f);
          }
        }
      }
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  out.node = ggml_flash_attn_ext(ctx, ggml_permute(ctx, q, 0, 2, 1, 3), views[0], views[1], mask,
                                 scale, s.max_bias, s.softcap);
  if (s.sinks) {
    ggml_tensor* sinks = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, s.heads);
    fill_normal(sinks, rng);
    ggml_flash_attn_ext_add_sinks(out.node, sinks);
  }
  std::memset(out.node->data, 0xff, ggml_nbytes(out.node));  // NaN: an unwritten row fails
}

// ggml's definition in fp64: dst [dv, heads, rows, streams].
std::vector<double> oracle(const ggml_tensor* node) {
  const ggml_tensor* q = node->src[0];
  const ggml_tensor* k = node->src[1];
  const ggml_tensor* v = node->src[2];
  const ggml_tensor* mask = node->src[3];
  const ggml_tensor* sinks = node->src[4];
  float scale, max_bias, cap;
  std::memcpy(&scale, &node->op_params[0], 4);
  std::memcpy(&max_bias, &node->op_params[1], 4);
  std::memcpy(&cap, &node->op_params[2], 4);
  const std::int64_t d = q->ne[0], rows = q->ne[1], heads = q->ne[2], streams = q->ne[3];
  const std::int64_t dv = v->ne[0], n_kv = k->ne[1], group = heads / k->ne[2];
  const std::int64_t h2 = std::int64_t{1} << static_cast<int>(std::floor(std::log2(heads)));
  std::vector<double> out(static_cast<std::size_t>(dv * heads * rows * streams));
  std::vector<double> score(static_cast<std::size_t>(n_kv));
  std::vector<char> seen(static_cast<std::size_t>(n_kv));
  for (std::int64_t st = 0; st < streams; ++st) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t h = 0; h < heads; ++h) {
        const double slope =
            max_bias <= 0.0f ? 1.0
            : h < h2         ? std::pow(std::pow(2.0, -max_bias / static_cast<double>(h2)), h + 1)
                             : std::pow(std::pow(2.0, -max_bias / 2.0 / static_cast<double>(h2)),
                                        2 * (h - h2) + 1);
        double m = -kInf;
        for (std::int64_t j = 0; j < n_kv; ++j) {
          const double mv = mask == nullptr
                                ? 0.0
                                : slope * value(mask, j * mask->nb[0] + r * mask->nb[1] +
                                                          (h % mask->ne[2]) * mask->nb[2] +
                                                          (st % mask->ne[3]) * mask->nb[3]);
          seen[static_cast<std::size_t>(j)] = mv != -kInf;
          if (mv == -kInf) continue;
          double dot = 0.0;
          for (std::int64_t i = 0; i < d; ++i) {
            dot += value(q, i * q->nb[0] + r * q->nb[1] + h * q->nb[2] + st * q->nb[3]) *
                   kv_value(k, i, j * k->nb[1] + (h / group) * k->nb[2] + st * k->nb[3]);
          }
          double x = dot * scale;
          if (cap > 0.0f) x = cap * std::tanh(x / cap);
          x += mv;
          score[static_cast<std::size_t>(j)] = x;
          m = std::max(m, x);
        }
        double* o = &out[static_cast<std::size_t>(((st * rows + r) * heads + h) * dv)];
        if (m == -kInf) continue;  // no visible cell: 0, with or without a sink
        const double sink = sinks != nullptr ? static_cast<const float*>(sinks->data)[h] : -kInf;
        const double top = std::max(m, sink);
        double l = sinks != nullptr ? std::exp(sink - top) : 0.0;
        for (std::int64_t j = 0; j < n_kv; ++j) {
          if (!seen[static_cast<std::size_t>(j)]) continue;
          const double w = std::exp(score[static_cast<std::size_t>(j)] - top);
          l += w;
          for (std::int64_t i = 0; i < dv; ++i) {
            o[i] += w * kv_value(v, i, j * v->nb[1] + (h / group) * v->nb[2] + st * v->nb[3]);
          }
        }
        for (std::int64_t i = 0; i < dv; ++i) o[i] /= l;
      }
    }
  }
  return out;
}

// `check`: what else the runner's problem must show (its variant, its seq_lens).
void expect_matches(const NodeSpec& s, std::uint32_t seed, const std::string& what,
                    const std::function<void(const DecodeProblem&)>& check = {}) {
  for (std::int32_t threads : {1, 3}) {
    Node n;
    build(n, s, seed);
    ASSERT_EQ(why_not(n.node), "") << what;
    FlashAttnRunner runner;
    runner.set_threads(threads);
    runner.run(n.node);
    if (check) check(runner.problem());
    const std::vector<double> ref = oracle(n.node);
    const auto* got = static_cast<const float*>(n.node->data);
    double worst = 0.0, largest = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << what << " threads " << threads << " element " << i;
      worst = std::max(worst, std::abs(got[i] - ref[i]));
      largest = std::max(largest, std::abs(ref[i]));
    }
    EXPECT_LT(worst, 2e-4 * std::max(1.0, largest)) << what << " threads " << threads;
  }
}

TEST(FlashAttnNode, DecodeStepsAsLlamaCppBuildsThem) {
  std::uint32_t seed = 1;
  for (ggml_type kv :
       {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
    for (std::int64_t rows : {1, 2, 5, 8}) {
      NodeSpec s;
      s.kv = kv;
      s.rows = rows;
      expect_matches(s, seed++, std::string(ggml_type_name(kv)) + " rows " + std::to_string(rows));
    }
  }
}

// Prompt micro-batches (more than kMaxRows rows: each stream one request of that many query
// tokens, the mask read in place): a causal prompt, a window, llama-server's interleaved slots,
// random masks with hidden runs and a hidden head group, per-head masks with soft-cap and sinks,
// two streams, f16 and q8_0 caches; ALiBi on a prompt stays on ggml.
TEST(FlashAttnNode, PromptMicroBatches) {
  std::uint32_t seed = 900;
  for (const MaskKind mask :
       {MaskKind::prefix, MaskKind::window, MaskKind::sequences, MaskKind::random}) {
    for (const std::int64_t rows : {9, 64, 300}) {
      NodeSpec s;
      s.rows = rows;
      s.n_kv = rows + 400;
      s.mask = mask;
      s.streams = rows == 64 ? 2 : 1;
      s.kv = rows == 9 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
      s.mask_heads = mask == MaskKind::random ? s.heads : 1;
      expect_matches(
          s, seed++,
          "mask " + std::to_string(static_cast<int>(mask)) + " rows " + std::to_string(rows));
    }
  }
  NodeSpec extras;
  extras.rows = 40;
  extras.n_kv = 90;
  extras.softcap = 20.0f;
  extras.sinks = true;
  expect_matches(extras, seed++, "softcap + sinks");
  NodeSpec alibi = extras;
  alibi.mask = MaskKind::alibi;
  alibi.max_bias = 8.0f;
  Node n;
  build(n, alibi, seed);
  EXPECT_NE(why_not(n.node).find("max_bias"), std::string::npos) << why_not(n.node);
  // Where ggml computes row by row (q8_0, or fewer than 64 rows), the backend takes prompts.
  NodeSpec q8;
  q8.rows = 64;
  q8.kv = GGML_TYPE_Q8_0;
  Node taken;
  build(taken, q8, seed);
  EXPECT_EQ(why_not(taken.node), "");
}

// One runner through nodes of every kind in turn, as llama.cpp hands them over a prompt and the
// decode steps after it: each node's problem is its own (a prompt's query_start_loc once leaked
// into the next decode step's problem and broke every decode node after a prompt), pages,
// windows and cuts by sequence included.
TEST(FlashAttnNode, OneRunnerAcrossPromptsAndDecodeSteps) {
  std::vector<NodeSpec> specs(5);
  specs[0].rows = 300;  // a one-stream causal prompt
  specs[0].n_kv = 700;
  specs[1].rows = 1;  // a decode step
  specs[1].n_kv = 701;
  specs[2].rows = 64;  // a prompt of two streams, random mask values
  specs[2].streams = 2;
  specs[2].n_kv = 500;
  specs[2].mask = MaskKind::random;
  specs[3].rows = 4;  // a few rows (speculative drafts), sinks
  specs[3].n_kv = 300;
  specs[3].sinks = true;
  specs[4].rows = 1;
  specs[4].streams = 3;
  specs[4].n_kv = 200;
  specs.resize(9);
  specs[5].rows = 3;  // decode rows of interleaved slots: read by pages, each its own table
  specs[5].n_kv = 480;
  specs[5].kv_size = 544;
  specs[5].mask = MaskKind::slot_runs;
  specs[6].rows = 1;  // a plain decode step after it: contiguous again
  specs[6].n_kv = 481;
  specs[7].rows = 40;  // a unified cache's prompt beside three decoding slots: cut by sequence
  specs[7].n_kv = 520;
  specs[7].mask = MaskKind::slots;
  specs[8].rows = 2;  // decode rows of slots in their own blocks: a window
  specs[8].n_kv = 300;
  specs[8].mask = MaskKind::slots;
  FlashAttnRunner runner;
  runner.set_threads(2);
  std::uint32_t seed = 1700;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Node n;
    build(n, specs[i], seed++);
    ASSERT_EQ(why_not(n.node), "") << "node " << i;
    runner.run(n.node);
    const std::vector<double> ref = oracle(n.node);
    const auto* got = static_cast<const float*>(n.node->data);
    double worst = 0.0, largest = 0.0;
    for (std::size_t e = 0; e < ref.size(); ++e) {
      worst = std::max(worst, std::abs(got[e] - ref[e]));
      largest = std::max(largest, std::abs(ref[e]));
    }
    EXPECT_LT(worst, 2e-4 * std::max(1.0, largest)) << "node " << i;
  }
}

// Prompt masks of causal shape (mask_shape.hpp: a causal prompt with random visible values, a
// sliding window) run leanattn's causal variant, the window the mask's, each stream's seq_len
// the end of its last row (its filled cells); masks one cell off that shape (a row that sees the
// next row's cell, a hole) and llama-server's interleaved slots stay non-causal in three streams
// and are cut into causal requests by sequence in one (row_requests). One stream and
// three (each at its own depth), one mask for every head and one per head, f16 and q8_0.
TEST(FlashAttnNode, CausalPromptsRunCausal) {
  std::uint32_t seed = 1500;
  for (const MaskKind mask : {MaskKind::causal, MaskKind::window, MaskKind::causal_extra,
                              MaskKind::causal_hole, MaskKind::sequences}) {
    for (const std::int64_t rows : {9, 64, 300}) {
      for (const std::int64_t streams : {1, 3}) {
        if (rows == 300 && streams == 3) continue;
        NodeSpec s;
        s.rows = rows;
        s.streams = streams;
        s.n_kv = rows + 120;
        s.mask = mask;
        s.kv = rows == 64 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
        s.mask_heads = rows == 9 ? s.heads : 1;
        const bool causal = mask == MaskKind::causal || mask == MaskKind::window;
        const std::string what = "mask " + std::to_string(static_cast<int>(mask)) + " rows " +
                                 std::to_string(rows) + " streams " + std::to_string(streams);
        expect_matches(s, seed++, what, [&](const DecodeProblem& p) {
          if (!causal && streams == 1) {
            // One stream off the shape is cut by sequence (row_requests): causal requests of
            // rows that each end after the row before, the bias hiding the holes (interleaved
            // slots, the hole: one request); the row that sees one cell more ends where the next
            // row does, which starts another (two).
            EXPECT_TRUE(p.variant.causal) << what;
            EXPECT_EQ(p.query_start_loc.size(), mask == MaskKind::causal_extra ? 3u : 2u) << what;
            return;
          }
          EXPECT_EQ(p.variant.causal, causal) << what;
          EXPECT_EQ(p.variant.window_left, mask == MaskKind::window ? 40 : -1) << what;
          ASSERT_EQ(p.seq_lens.size(), static_cast<std::size_t>(streams)) << what;
          for (std::int64_t st = 0; st < streams && causal; ++st) {
            EXPECT_EQ(p.seq_lens[static_cast<std::size_t>(st)], s.n_kv - 5 - 17 * st) << what;
          }
        });
      }
    }
  }
}

// A unified cache (llama-server -kvu, MaskKind::slots): three slots decoding beside a fourth's
// prompt rows in one stream. Up to kMaxRows rows, each row a request reading from its own
// block's first cell (a window covering every row's span); above, one request per slot
// (row_requests): three one-row requests and the prompt's causal request, each skipping the cells
// before its own. Against the oracle, f16 and q8_0, one and three streams of few rows.
TEST(FlashAttnNode, UnifiedCacheSlotsReadTheirOwnCells) {
  std::uint32_t seed = 2100;
  for (const std::int64_t rows : {1, 3, 5, 8, 40, 300}) {
    for (const std::int64_t streams : {1, 3}) {
      if (rows > 8 && streams > 1) continue;  // several streams: each its own sequence
      NodeSpec s;
      s.rows = rows;
      s.streams = streams;
      s.n_kv = rows + 480;
      s.mask = MaskKind::slots;
      s.kv = rows == 40 || rows == 5 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
      const std::string what =
          "rows " + std::to_string(rows) + " streams " + std::to_string(streams);
      const std::int64_t z = (s.n_kv - rows) / 4, decoding = std::min<std::int64_t>(rows, 3);
      expect_matches(s, seed++, what, [&](const DecodeProblem& p) {
        // The longest span: the last decoding slot's (z / 2 + 7 r cells) or the prompt's (z / 3
        // + its rows); slot 0 alone starts at cell 0: no window.
        const std::int64_t widest =
            std::max(z / 2 + 7 * (decoding - 1), rows > decoding ? z / 3 + rows - decoding : 0);
        EXPECT_EQ(p.variant.window_left, rows == 1 ? -1 : widest - 1) << what;
        if (rows <= 8) return;
        EXPECT_TRUE(p.variant.causal) << what;
        ASSERT_EQ(p.query_start_loc,
                  (std::vector<std::int32_t>{0, 1, 2, 3, static_cast<std::int32_t>(rows)}))
            << what;
        EXPECT_EQ(p.seq_lens,
                  (std::vector<std::int32_t>{static_cast<std::int32_t>(z / 2),
                                             static_cast<std::int32_t>(z + z / 2 + 7),
                                             static_cast<std::int32_t>(2 * z + z / 2 + 14),
                                             static_cast<std::int32_t>(3 * z + z / 3 + rows - 3)}))
            << what;
      });
    }
  }
}

// A unified cache whose slots' cells interleave in runs (MaskKind::slot_runs: prefilled in the
// same batches): up to kMaxRows rows, each row's request reads only the pages of 32 cells that
// hold a cell it sees (paged, its own block table, the bias in its own key order), one stream and
// three; against the oracle with f16, q8_0 and q4_0, soft-cap and sinks.
TEST(FlashAttnNode, InterleavedSlotsReadOnlyTheirPages) {
  std::uint32_t seed = 2300;
  for (const std::int64_t rows : {1, 3, 8}) {
    for (const std::int64_t streams : {1, 3}) {
      for (const ggml_type kv : {GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
        NodeSpec s;
        s.rows = rows;
        s.streams = streams;
        s.n_kv = 480;  // pages of 32 (the largest power of two dividing 480 and 544)
        s.kv_size = 544;
        s.kv = kv;
        s.mask = MaskKind::slot_runs;
        s.softcap = rows == 3 ? 30.0f : 0.0f;
        s.sinks = rows == 8;
        const std::string what = std::string(ggml_type_name(kv)) + " rows " + std::to_string(rows) +
                                 " streams " + std::to_string(streams);
        expect_matches(s, seed++, what, [&](const DecodeProblem& p) {
          EXPECT_EQ(p.layout, KvLayout::paged) << what;
          EXPECT_EQ(p.page_size, 32) << what;
          EXPECT_EQ(p.variant.window_left, -1) << what;
          // Three runs of 64 cells, each over 3 pages: 9 of the 15 pages at most.
          for (std::int32_t len : p.seq_lens) EXPECT_LE(len, 9 * 32) << what;
        });
      }
    }
  }
}

// K and V of different types, as llama.cpp's -ctk and -ctv make them: every pair of f16, q8_0
// and q4_0, two streams of several rows.
TEST(FlashAttnNode, KAndVOfDifferentTypes) {
  std::uint32_t seed = 60;
  const ggml_type types[] = {GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
  for (ggml_type k : types) {
    for (ggml_type v : types) {
      if (k == v) continue;
      NodeSpec s;
      s.kv = k;
      s.v = v;
      s.heads = 9;
      s.kv_heads = 3;
      s.rows = 3;
      s.streams = 2;
      expect_matches(s, seed++, std::string("K ") + ggml_type_name(k) + " V " + ggml_type_name(v));
    }
  }
}

TEST(FlashAttnNode, MasksWithHolesWindowsAndEmptyRows) {
  std::uint32_t seed = 100;
  for (MaskKind mask : {MaskKind::none, MaskKind::sequences, MaskKind::window, MaskKind::random}) {
    for (std::int64_t streams : {1, 3}) {
      for (std::int64_t rows : {1, 4}) {
        NodeSpec s;
        s.mask = mask;
        s.streams = streams;
        s.rows = rows;
        s.n_kv = 257;
        expect_matches(s, seed++,
                       "mask " + std::to_string(static_cast<int>(mask)) + " streams " +
                           std::to_string(streams) + " rows " + std::to_string(rows));
      }
    }
  }
}

TEST(FlashAttnNode, AlibiSoftcapSinksAndPerHeadMasks) {
  NodeSpec alibi;
  alibi.mask = MaskKind::alibi;
  alibi.max_bias = 8.0f;
  alibi.heads = 12;  // not a power of two: both slope series
  alibi.kv_heads = 12;
  expect_matches(alibi, 7, "alibi");
  NodeSpec cap;
  cap.softcap = 2.0f;
  cap.sinks = true;
  cap.rows = 3;
  expect_matches(cap, 8, "softcap + sinks");
  NodeSpec heads;
  heads.mask = MaskKind::random;
  heads.mask_heads = 8;
  heads.sinks = true;
  heads.streams = 2;
  expect_matches(heads, 9, "a mask per head, sinks, random");
}

TEST(FlashAttnNode, GqaRatiosAndHeadSizes) {
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {64, 9, 3}, {128, 7, 7}, {80, 6, 1}, {256, 4, 2}, {16, 16, 4}};
  std::uint32_t seed = 200;
  for (const auto& [d, heads, kv_heads] : shapes) {
    for (ggml_type kv : {GGML_TYPE_F16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
      if (d % 32 != 0 && kv != GGML_TYPE_F16) continue;  // ggml's blocks are 32 wide
      NodeSpec s;
      s.d = d;
      s.heads = heads;
      s.kv_heads = kv_heads;
      s.kv = kv;
      s.rows = 2;
      s.n_kv = 129;
      s.streams = kv == GGML_TYPE_Q4_0 ? 2 : 1;
      expect_matches(s, seed++,
                     std::string(ggml_type_name(kv)) + " d " + std::to_string(d) + " heads " +
                         std::to_string(heads) + "/" + std::to_string(kv_heads));
    }
  }
}

// DeepSeek's MLA as llama.cpp's deepseek2 graph builds it: one KV head of 576 (the latent 512
// and the rope 64), V the first 512 values of the same cache rows; and K wider than V in caches
// of their own.
TEST(FlashAttnNode, KeysWiderThanValues) {
  std::uint32_t seed = 300;
  for (ggml_type kv : {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0}) {
    for (std::int64_t rows : {1, 3}) {
      NodeSpec s;
      s.d = 576;
      s.dv = 512;
      s.v_in_k = true;
      s.heads = 16;
      s.kv_heads = 1;
      s.kv = kv;
      s.rows = rows;
      s.n_kv = 97;
      s.streams = rows == 3 ? 2 : 1;
      expect_matches(s, seed++,
                     std::string("MLA ") + ggml_type_name(kv) + " rows " + std::to_string(rows));
    }
  }
  NodeSpec own;
  own.d = 192;
  own.dv = 128;
  own.heads = 6;
  own.kv_heads = 2;
  own.rows = 2;
  own.n_kv = 150;
  expect_matches(own, seed++, "K 192 / V 128");
}

TEST(FlashAttnNode, DeclinesWhatItDoesNotComputeByReason) {
  const std::vector<std::pair<std::string, std::function<void(NodeSpec&)>>> specs = {
      {"k: q5_0", [](NodeSpec& s) { s.kv = GGML_TYPE_Q5_0; }},
      {"v: q8_0 with k's bf16",
       [](NodeSpec& s) {
         s.kv = GGML_TYPE_BF16;
         s.v = GGML_TYPE_Q8_0;
       }},
      {"head size 72", [](NodeSpec& s) { s.d = 72; }},
      {"v: head size 24", [](NodeSpec& s) { s.dv = 24; }},
      {"v: head size 48: must be a multiple of 32",
       [](NodeSpec& s) {
         s.kv = GGML_TYPE_Q8_0;
         s.dv = 48;
       }},
      {"head size 592", [](NodeSpec& s) { s.d = 592; }},
      {"rows: more query rows than cells",
       [](NodeSpec& s) {
         s.rows = 9;
         s.n_kv = 8;
       }},
      {"rows: more query rows than cells",
       [](NodeSpec& s) {
         s.rows = 300;
         s.n_kv = 299;
         s.mask = MaskKind::causal;
       }},
      {"mask: per-head groups", [](NodeSpec& s) { s.mask_heads = 2; }},
  };
  for (const auto& [reason, change] : specs) {
    NodeSpec s;
    change(s);
    Node n;
    build(n, s, 5);
    const std::string why = why_not(n.node);
    EXPECT_NE(why.find(reason), std::string::npos) << reason << ": " << why;
    FlashAttnRunner runner;
    EXPECT_ANY_THROW(runner.run(n.node)) << reason;
  }
  // A prompt of the shape ggml's tiled path takes (f16, 64 rows) is taken.
  {
    NodeSpec s;
    s.rows = 64;
    Node n;
    build(n, s, 7);
    EXPECT_EQ(why_not(n.node), "");
  }
  // The n_kv_max sparsity hint of newer versions.
  Node n;
  build(n, NodeSpec{}, 6);
  ggml_flash_attn_ext_set_n_kv_max(n.node, 100);
  EXPECT_NE(why_not(n.node).find("n_kv_max"), std::string::npos);
}

}  // namespace
}  // namespace leanattn::llama_cpp
