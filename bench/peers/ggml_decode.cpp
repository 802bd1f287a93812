// ggml_decode: times ggml_flash_attn_ext, ggml's CPU flash attention, on one decode problem the
// way llama.cpp calls it, and checks its output against the fp64 reference. Built and run by
// run_peers.sh; prints one JSON line (common.hpp).
//
// Configuration (as llama.cpp decodes): f32 Q, f16 K and V in llama.cpp's KV-cache layout
// (token-major rows of kv_heads x head_dim, viewed and permuted to [head_dim, n_kv, kv_heads]),
// GGML_PREC_F32, scale 1/sqrt(head_dim). The graph is planned once (ggml_graph_plan) and run on a
// persistent ggml thread pool (ggml_threadpool_new, one thread pinned per core), so thread
// creation is not timed.
// Batch 1: no mask (ggml then takes its split-KV path). A batch: one KV stream per request, as
// llama.cpp keeps them by default (kv_unified = false): K and V [d, capacity, kv_heads, batch],
// and for ragged lengths an f16 mask [capacity, 1, 1, batch] that hides each request's padding
// (-inf; ggml skips those keys but still walks the capacity).
// K and V of different widths (--head-dim-v): Dk != Dv, the output [dv, heads, 1, batch]. With
// --v-in-k (absorbed MLA, as llama.cpp's deepseek2 graph with its default f16 cache): no V cache;
// V is a ggml_view_4d of K with ne0 = dv and K's strides, as llm_graph_context::build_attn does.
#include <ggml-cpu.h>
#include <ggml.h>

#include <memory>

#include "common.hpp"

int main(int argc, char** argv) {
  const peers::Args a = peers::parse_args(argc, argv);
  const int d = a.head_dim, dv = a.dv(), H = a.q_heads, Hkv = a.kv_heads, B = a.batch(),
            cap = a.longest();
  const std::int64_t row = static_cast<std::int64_t>(Hkv) * d, row_v = std::int64_t{Hkv} * dv;
  const std::int64_t kv_elems = static_cast<std::int64_t>(B) * cap * row;
  const std::int64_t v_elems = a.v_in_k ? 0 : static_cast<std::int64_t>(B) * cap * row_v;
  const int copies = peers::kv_copies(a, (kv_elems + v_elems) * 2);

  // K: `copies` identical buffers [batch][capacity][kv_heads][head_dim] f16 (one llama.cpp KV
  // stream per request), V the same with dv (none with --v-in-k); Q: [batch][heads][head_dim] f32.
  std::vector<peers::HugeVector<std::uint16_t>> k(copies), v(copies);
  k[0].resize(kv_elems);
  v[0].resize(v_elems);
  peers::fill_16bit(k[0].data(), kv_elems, 11, false);
  peers::fill_16bit(v[0].data(), v_elems, 12, false);
  for (int c = 1; c < copies; ++c) k[c] = k[0], v[c] = v[0];
  std::vector<float> q(static_cast<std::size_t>(B) * H * d);
  std::vector<float> out(static_cast<std::size_t>(B) * H * dv, NAN);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = peers::normal_at(13, i);

  std::vector<std::int64_t> start(B), start_v(B);
  for (int b = 0; b < B; ++b) start[b] = b * cap * row, start_v[b] = b * cap * row_v;
  std::vector<std::uint16_t> mask;  // [batch][capacity]: 0 for a request's tokens, -inf after
  if (a.ragged()) {
    mask.assign(static_cast<std::size_t>(B) * cap, peers::f32_to_f16(-INFINITY));
    for (int b = 0; b < B; ++b)
      std::fill_n(mask.begin() + static_cast<std::int64_t>(b) * cap, a.seq_lens[b], 0);
  }

  // One graph per KV copy, tensors pointing at our buffers (no_alloc).
  const std::size_t ctx_bytes =
      copies * (8 * ggml_tensor_overhead() + ggml_graph_overhead()) + (1 << 20);
  ggml_init_params ip = {ctx_bytes, nullptr, true};
  std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init(ip), ggml_free);
  std::vector<ggml_cgraph*> graphs;
  for (int c = 0; c < copies; ++c) {
    ggml_tensor* qt = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, d, H, 1, B);
    ggml_tensor* kt = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, d, Hkv, cap, B);
    kt->data = k[c].data();
    ggml_tensor* vt = nullptr;
    if (a.v_in_k) {
      vt = ggml_view_4d(ctx.get(), kt, dv, Hkv, cap, B, kt->nb[1], kt->nb[2], kt->nb[3], 0);
    } else {
      vt = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, dv, Hkv, cap, B);
      vt->data = v[c].data();
    }
    qt->data = q.data();
    ggml_tensor* mt = nullptr;
    if (!mask.empty()) {
      mt = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, cap, 1, 1, B);
      mt->data = mask.data();
    }
    ggml_tensor* o = ggml_flash_attn_ext(ctx.get(), ggml_permute(ctx.get(), qt, 0, 2, 1, 3),
                                         ggml_permute(ctx.get(), kt, 0, 2, 1, 3),
                                         ggml_permute(ctx.get(), vt, 0, 2, 1, 3), mt,
                                         1.0f / std::sqrt(static_cast<float>(d)), 0.0f, 0.0f);
    ggml_prec_set_acc(o, GGML_PREC_F32);
    o->data = out.data();  // [dv, heads, 1, batch] f32 = out[b][h][i]
    ggml_cgraph* g = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(g, o);
    graphs.push_back(g);
  }

  ggml_threadpool_params tpp = ggml_threadpool_params_default(a.threads);
  for (int t = 0; t < a.threads && t < GGML_MAX_N_THREADS; ++t) tpp.cpumask[t] = true;
  tpp.strict_cpu = true;  // thread i on core i
  ggml_threadpool* pool = ggml_threadpool_new(&tpp);
  if (!pool) {
    std::fprintf(stderr, "ggml_decode: ggml_threadpool_new failed\n");
    return 1;
  }
  std::vector<ggml_cplan> plans;
  std::vector<std::uint8_t> work;
  for (ggml_cgraph* g : graphs) {
    plans.push_back(ggml_graph_plan(g, a.threads, pool));
    work.resize(std::max(work.size(), plans.back().work_size));
  }
  for (ggml_cplan& p : plans) p.work_data = work.data();

  bool failed = false;
  const peers::Timing t = peers::time_runs(a, copies, [&](int c) {
    failed |= ggml_graph_compute(graphs[c], &plans[c]) != GGML_STATUS_SUCCESS;
  });
  if (failed) {
    std::fprintf(stderr, "ggml_decode: ggml_graph_compute failed\n");
    return 1;
  }
  std::fill(out.begin(), out.end(), NAN);
  ggml_graph_compute(graphs[0], &plans[0]);
  ggml_threadpool_free(pool);

  const peers::KvView kv{k[0].data(), start, row, d, false};
  const peers::KvView vv = a.v_in_k ? kv : peers::KvView{v[0].data(), start_v, row_v, dv, false};
  const peers::Check chk = peers::check_all_rows(a, q, kv, vv, out);
  const std::string config =
      std::string("flash_attn_ext f32 Q f16 KV token-major, ") +
      (a.v_in_k ? "V a view of K's rows, " : "") + "GGML_PREC_F32, " +
      (mask.empty() ? "no mask" : "padded streams + mask") +
      // ggml-cpu's choice (ops.cpp, ggml_compute_forward_flash_attn_ext_f16) for one query token.
      (B == 1 && cap >= 512 ? ", split-KV path" : ", one task per (request, query head)") +
      ", threadpool strict_cpu";
  peers::print_result(a, "ggml", "f16", t, copies, chk,
                      std::string("ggml ") + ggml_version() + " (" + ggml_commit() + ")", config);
  return 0;
}
