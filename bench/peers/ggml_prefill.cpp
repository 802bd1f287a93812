// ggml_prefill: times ggml_flash_attn_ext, ggml's CPU flash attention, on one prompt micro-batch
// the way llama.cpp calls it while processing a prompt at depth, and checks sampled rows against
// an fp64 reference. Run by bench/prefill_vs_ggml.sh beside `leanattn bench --q-len`; prints one
// line of key=value fields.
//
// The node: f32 Q of --q-len rows x --q-heads, K and V of --depth + --q-len cells x --kv-heads in
// llama.cpp's cache layout (token-major rows of kv_heads x head_dim, viewed and permuted to
// [head_dim, n_kv, kv_heads]), f16 or q8_0 (--type), an f16 mask [n_kv, q_len] in which row i
// sees cells [0, depth + i] (a causal prompt at depth, llama.cpp's order for a cache that has not
// wrapped), GGML_PREC_F32, scale 1/sqrt(head_dim). ggml picks its path itself: the tiled prefill
// kernel for f16 K and V and at least 64 rows (ops.cpp, use_tiled), its per-row kernel for q8_0.
// One graph, planned once, run on a persistent ggml thread pool (one pinned thread per core).
//
// Usage: ggml_prefill --q-heads H --kv-heads K --head-dim D --depth N --q-len R [--type f16|q8_0]
//                     [--threads T] [--repeat R] [--warmup W]
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

struct Options {
  int q_heads = 9, kv_heads = 3, head_dim = 64, depth = 4096, q_len = 512;
  int threads = 2, repeat = 5, warmup = 1;
  std::string type = "f16";
};

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr,
               "ggml_prefill: %s\nusage: ggml_prefill --q-heads H --kv-heads K --head-dim D "
               "--depth N --q-len R [--type f16|q8_0] [--threads T] [--repeat R] [--warmup W]\n",
               what.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) usage("missing value after " + f);
    const std::string v = argv[++i];
    if (f == "--type") {
      if (v != "f16" && v != "q8_0") usage("--type: f16 or q8_0 (got '" + v + "')");
      o.type = v;
      continue;
    }
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || n < 0) usage(f + ": not a count: '" + v + "'");
    int* field = f == "--q-heads"    ? &o.q_heads
                 : f == "--kv-heads" ? &o.kv_heads
                 : f == "--head-dim" ? &o.head_dim
                 : f == "--depth"    ? &o.depth
                 : f == "--q-len"    ? &o.q_len
                 : f == "--threads"  ? &o.threads
                 : f == "--repeat"   ? &o.repeat
                 : f == "--warmup"   ? &o.warmup
                                     : nullptr;
    if (field == nullptr) usage("unknown flag " + f);
    *field = static_cast<int>(n);
  }
  if (o.kv_heads < 1 || o.q_heads % o.kv_heads != 0 || o.head_dim % 32 != 0 || o.q_len < 1 ||
      o.threads < 1 || o.repeat < 1) {
    usage("--q-heads a multiple of --kv-heads, --head-dim a multiple of 32, the counts >= 1");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options a = parse(argc, argv);
  const int d = a.head_dim, H = a.q_heads, Hkv = a.kv_heads, R = a.q_len;
  const int n_kv = a.depth + R;
  const ggml_type type = a.type == "q8_0" ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
  const std::int64_t row_values = std::int64_t{Hkv} * d;  // one cell's K (or V) across KV heads

  // K and V as floats, then stored as `type`; the reference reads the stored values back.
  std::vector<float> kf(static_cast<std::size_t>(n_kv) * row_values);
  std::vector<float> vf(kf.size());
  for (std::size_t i = 0; i < kf.size(); ++i) {
    kf[i] = peers::normal_at(11, i);
    vf[i] = peers::normal_at(12, i);
  }
  const std::size_t row_bytes = ggml_row_size(type, row_values);
  std::vector<std::uint8_t> k(row_bytes * n_kv), v(row_bytes * n_kv);
  ggml_quantize_init(type);
  if (type == GGML_TYPE_F16) {
    ggml_fp32_to_fp16_row(kf.data(), reinterpret_cast<ggml_fp16_t*>(k.data()), kf.size());
    ggml_fp32_to_fp16_row(vf.data(), reinterpret_cast<ggml_fp16_t*>(v.data()), vf.size());
  } else {
    ggml_quantize_chunk(type, kf.data(), k.data(), 0, n_kv, row_values, nullptr);
    ggml_quantize_chunk(type, vf.data(), v.data(), 0, n_kv, row_values, nullptr);
  }
  const ggml_type_traits* traits = ggml_get_type_traits(type);
  traits->to_float(k.data(), kf.data(), static_cast<std::int64_t>(kf.size()));
  traits->to_float(v.data(), vf.data(), static_cast<std::int64_t>(vf.size()));

  std::vector<float> q(static_cast<std::size_t>(R) * H * d);  // [token][head][d]
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = peers::normal_at(13, i);
  std::vector<std::uint16_t> mask(static_cast<std::size_t>(R) * n_kv);  // [row][cell]
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < n_kv; ++c) {
      mask[static_cast<std::size_t>(r) * n_kv + c] =
          peers::f32_to_f16(c <= a.depth + r ? 0.0f : -INFINITY);
    }
  }
  std::vector<float> out(static_cast<std::size_t>(R) * H * d, NAN);  // [token][head][d]

  ggml_init_params ip = {16 * ggml_tensor_overhead() + ggml_graph_overhead() + (1 << 20), nullptr,
                         true};
  std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init(ip), ggml_free);
  ggml_tensor* qt = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, d, H, R, 1);
  ggml_tensor* kt = ggml_new_tensor_4d(ctx.get(), type, d, Hkv, n_kv, 1);
  ggml_tensor* vt = ggml_new_tensor_4d(ctx.get(), type, d, Hkv, n_kv, 1);
  ggml_tensor* mt = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, n_kv, R, 1, 1);
  qt->data = q.data();
  kt->data = k.data();
  vt->data = v.data();
  mt->data = mask.data();
  ggml_tensor* o = ggml_flash_attn_ext(ctx.get(), ggml_permute(ctx.get(), qt, 0, 2, 1, 3),
                                       ggml_permute(ctx.get(), kt, 0, 2, 1, 3),
                                       ggml_permute(ctx.get(), vt, 0, 2, 1, 3), mt,
                                       1.0f / std::sqrt(static_cast<float>(d)), 0.0f, 0.0f);
  ggml_prec_set_acc(o, GGML_PREC_F32);
  o->data = out.data();  // [d, heads, rows] f32
  ggml_cgraph* g = ggml_new_graph(ctx.get());
  ggml_build_forward_expand(g, o);

  ggml_threadpool_params tpp = ggml_threadpool_params_default(a.threads);
  for (int t = 0; t < a.threads && t < GGML_MAX_N_THREADS; ++t) tpp.cpumask[t] = true;
  tpp.strict_cpu = true;
  ggml_threadpool* pool = ggml_threadpool_new(&tpp);
  if (pool == nullptr) {
    std::fprintf(stderr, "ggml_prefill: ggml_threadpool_new failed\n");
    return 1;
  }
  ggml_cplan plan = ggml_graph_plan(g, a.threads, pool);
  std::vector<std::uint8_t> work(plan.work_size);
  plan.work_data = work.data();
  std::vector<double> us;
  for (int i = 0; i < a.warmup + a.repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (ggml_graph_compute(g, &plan) != GGML_STATUS_SUCCESS) {
      std::fprintf(stderr, "ggml_prefill: ggml_graph_compute failed\n");
      return 1;
    }
    const std::chrono::duration<double, std::micro> t = std::chrono::steady_clock::now() - start;
    if (i >= a.warmup) us.push_back(t.count());
  }
  ggml_threadpool_free(pool);
  std::sort(us.begin(), us.end());

  // fp64 reference on sampled rows (first, last and evenly spaced between), every head.
  double max_err = 0.0;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const int samples = std::min(R, 8);
  for (int s = 0; s < samples; ++s) {
    const int r = samples == 1 ? 0 : static_cast<int>(std::int64_t{s} * (R - 1) / (samples - 1));
    const int visible = a.depth + r + 1;
    for (int h = 0; h < H; ++h) {
      const float* qr = &q[(static_cast<std::size_t>(r) * H + h) * d];
      const std::int64_t kv_at = std::int64_t{h / (H / Hkv)} * d;
      std::vector<double> w(static_cast<std::size_t>(visible));
      double mx = -INFINITY, sum = 0.0;
      for (int c = 0; c < visible; ++c) {
        const float* kr = &kf[static_cast<std::size_t>(c * row_values + kv_at)];
        double dot = 0.0;
        for (int i = 0; i < d; ++i) dot += static_cast<double>(qr[i]) * kr[i];
        w[static_cast<std::size_t>(c)] = dot * scale;
        mx = std::max(mx, dot * scale);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int i = 0; i < d; ++i) {
        double acc = 0.0;
        for (int c = 0; c < visible; ++c) {
          acc += w[static_cast<std::size_t>(c)] *
                 vf[static_cast<std::size_t>(c * row_values + kv_at + i)];
        }
        const double got = out[(static_cast<std::size_t>(r) * H + h) * d + i];
        max_err = std::max(max_err, std::abs(got - acc / sum));
      }
    }
  }
  const double fmas = 2.0 * d * H * (static_cast<double>(R) * a.depth + R * (R + 1.0) / 2.0);
  const double median = us[us.size() / 2];
  std::printf(
      "impl=ggml type=%s heads=%d/%d d=%d depth=%d q_len=%d threads=%d median_us=%.1f "
      "min_us=%.1f gfma_s=%.2f max_err=%.3g check=%s ggml=%s(%s)\n",
      a.type.c_str(), H, Hkv, d, a.depth, R, a.threads, median, us.front(), fmas / median * 1e-3,
      max_err, max_err <= 2e-3 ? "ok" : "FAIL", ggml_version(), ggml_commit());
  return max_err <= 2e-3 ? 0 : 1;
}
