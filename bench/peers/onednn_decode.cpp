// onednn_decode: times oneDNN's unfused decode attention (matmul, softmax, matmul: the version
// Debian ships has no fused SDPA) on one decode problem and checks its output against the fp64
// reference. Built and run by run_peers.sh (which sets OMP_NUM_THREADS and pinning: Debian's
// oneDNN uses OpenMP); prints one JSON line (common.hpp).
//
// Configuration: bf16 Q, K, V in the layout a batched matmul wants, [batch, kv_heads, tokens,
// head_dim]; the g query heads of a GQA group are the M dimension of each (request, KV head)
// matmul, so K and V are read once.
//   S = Q K^T * scale   matmul, bf16 x bf16 -> f32, scale as an eltwise_linear post-op
//   P = softmax(S)      softmax_v2 (accurate), f32 -> bf16
//   O = P V             matmul, bf16 x bf16 -> f32
// Ragged batches are not supported (a matmul has one K dimension): exit code 3. oneDNN 2.6 has
// bf16 matmul only on AVX-512 CPUs; elsewhere the same (bf16-valued) data runs in f32, recorded
// as dtype f32 (kv_bytes still counts 16-bit elements: the same problem, twice the bytes read).
// V narrower than K (--head-dim-v) is its own [batch, kv_heads, tokens, dv] buffer, or with
// --v-in-k a strided view of K's rows (row stride head_dim, the first dv values): no V copy.
#include <oneapi/dnnl/dnnl.hpp>

#include <type_traits>

#include "common.hpp"

using dnnl::memory;
using dt = dnnl::memory::data_type;

namespace {

// The problem's data, bf16 values (the reference reads these); the peer gets them as T.
struct Data {
  // k: [batch, kv_heads, tokens, head_dim]; v: the same with dv (empty with v_in_k);
  // q: [batch, heads, head_dim]
  std::vector<std::uint16_t> k, v, q;
};

std::vector<float> widen(const std::vector<std::uint16_t>& x) {
  std::vector<float> f(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) f[i] = peers::bf16_to_f32(x[i]);
  return f;
}

// Builds and times the pipeline with elements of type T (bf16 bits or float) = oneDNN type `et`.
template <typename T>
int run(const peers::Args& a, const Data& data, dt et) {
  const int d = a.head_dim, dv = a.dv(), g = a.group(), n = a.seq_lens[0];
  const memory::dim bh = static_cast<memory::dim>(a.batch()) * a.kv_heads;
  const int copies =
      peers::kv_copies(a, static_cast<std::int64_t>(data.k.size() + data.v.size()) * sizeof(T));
  auto as_t = [](const std::vector<std::uint16_t>& x) {
    peers::HugeVector<T> out(x.size());
    if constexpr (std::is_same_v<T, float>) {
      const std::vector<float> f = widen(x);
      std::copy(f.begin(), f.end(), out.begin());
    } else {
      std::copy(x.begin(), x.end(), out.begin());
    }
    return out;
  };
  std::vector<peers::HugeVector<T>> k(copies), v(copies);
  k[0] = as_t(data.k);
  v[0] = as_t(data.v);
  for (int c = 1; c < copies; ++c) k[c] = k[0], v[c] = v[0];
  peers::HugeVector<T> q = as_t(data.q);
  std::vector<float> out(static_cast<std::size_t>(bh) * g * dv, NAN);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const memory::desc q_md({bh, g, d}, et, memory::dims{g * d, d, 1});
  const memory::desc kt_md({bh, d, n}, et, memory::dims{n * d, 1, d});  // K^T, a view
  const memory::desc s_md({bh, g, n}, dt::f32, memory::dims{g * n, n, 1});
  const memory::desc p_md({bh, g, n}, et, memory::dims{g * n, n, 1});
  // V: its own rows of dv, or the first dv values of K's rows (row stride d).
  const memory::dim vs = a.v_in_k ? d : dv;
  const memory::desc v_md({bh, n, dv}, et, memory::dims{n * vs, vs, 1});
  const memory::desc o_md({bh, g, dv}, dt::f32, memory::dims{g * dv, dv, 1});

  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f / std::sqrt(static_cast<float>(d)),
                    0.0f);
  dnnl::primitive_attr scale_attr;
  scale_attr.set_post_ops(po);
  const dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(q_md, kt_md, s_md), scale_attr, eng);
  const dnnl::softmax_v2_forward::primitive_desc sm_pd(
      dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::softmax_accurate, s_md, p_md, 2),
      eng);
  const dnnl::matmul::primitive_desc pv_pd(dnnl::matmul::desc(p_md, v_md, o_md), eng);
  dnnl::matmul qk(qk_pd), pv(pv_pd);
  dnnl::softmax_v2_forward sm(sm_pd);

  memory q_m(q_md, eng, q.data()), s_m(s_md, eng), p_m(p_md, eng), o_m(o_md, eng, out.data());
  std::vector<memory> k_m, v_m;
  for (int c = 0; c < copies; ++c) {
    k_m.emplace_back(kt_md, eng, k[c].data());
    v_m.emplace_back(v_md, eng, a.v_in_k ? k[c].data() : v[c].data());
  }
  auto step = [&](int c) {
    qk.execute(strm, {{DNNL_ARG_SRC, q_m}, {DNNL_ARG_WEIGHTS, k_m[c]}, {DNNL_ARG_DST, s_m}});
    sm.execute(strm, {{DNNL_ARG_SRC, s_m}, {DNNL_ARG_DST, p_m}});
    pv.execute(strm, {{DNNL_ARG_SRC, p_m}, {DNNL_ARG_WEIGHTS, v_m[c]}, {DNNL_ARG_DST, o_m}});
    strm.wait();
  };
  const peers::Timing t = peers::time_runs(a, copies, step);
  std::fill(out.begin(), out.end(), NAN);
  step(0);

  std::vector<std::int64_t> start(a.batch()), start_v(a.batch());
  for (int b = 0; b < a.batch(); ++b) {
    start[b] = static_cast<std::int64_t>(b) * a.kv_heads * n * d;
    start_v[b] = static_cast<std::int64_t>(b) * a.kv_heads * n * dv;
  }
  const peers::KvView kv{data.k.data(), start, d, static_cast<std::int64_t>(n) * d, true};
  const peers::KvView vv =
      a.v_in_k ? kv : peers::KvView{data.v.data(), start_v, dv, std::int64_t{n} * dv, true};
  const peers::Check chk = peers::check_all_rows(a, widen(data.q), kv, vv, out);

  const dnnl_version_t* ver = dnnl_version();
  const std::string version = "oneDNN " + std::to_string(ver->major) + "." +
                              std::to_string(ver->minor) + "." + std::to_string(ver->patch);
  const bool f32 = std::is_same_v<T, float>;
  const std::string config = std::string("unfused ") +
                             (f32 ? "f32 (bf16 unsupported here; reads 2x kv_bytes)" : "bf16") +
                             " head-major" + (a.v_in_k ? ", V a strided view of K's rows" : "") +
                             "; QK " + qk_pd.impl_info_str() + ", softmax " +
                             sm_pd.impl_info_str() + ", PV " + pv_pd.impl_info_str();
  peers::print_result(a, "onednn", f32 ? "f32" : "bf16", t, copies, chk, version, config);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const peers::Args a = peers::parse_args(argc, argv);
  if (a.ragged()) {
    std::fprintf(stderr,
                 "onednn_decode: ragged batches are not supported (one K length per matmul)\n");
    return 3;
  }
  if (const char* env = std::getenv("OMP_NUM_THREADS"); !env || std::atoi(env) != a.threads) {
    std::fprintf(stderr, "onednn_decode: warning: OMP_NUM_THREADS (%s) != --threads %d\n",
                 env ? env : "unset", a.threads);
  }
  Data data;
  const std::int64_t kv_elems = a.total_tokens() * a.kv_heads * a.head_dim;
  const std::int64_t v_elems = a.v_in_k ? 0 : a.total_tokens() * a.kv_heads * a.dv();
  data.k.resize(kv_elems);
  data.v.resize(v_elems);
  data.q.resize(static_cast<std::size_t>(a.batch()) * a.q_heads * a.head_dim);
  peers::fill_16bit(data.k.data(), kv_elems, 21, true);
  peers::fill_16bit(data.v.data(), v_elems, 22, true);
  peers::fill_16bit(data.q.data(), static_cast<std::int64_t>(data.q.size()), 23, true);
  try {
    return run<std::uint16_t>(a, data, dt::bf16);
  } catch (const dnnl::error& e) {
    // oneDNN 2.6 has bf16 matmul only on AVX-512 CPUs; elsewhere the same values in f32.
    std::fprintf(stderr, "onednn_decode: bf16 not available (%s); using f32\n", e.what());
  }
  return run<float>(a, data, dt::f32);
}
